// Package admission serves the /validate-operator-types validating
// admission webhook (architecture.md, "CommitRequest finalize"): it names
// the submitter of each CommitRequest at admission, keyed by the object's
// UID, for the CommitRequest controller to read back. It never denies a
// request; without it a CommitRequest only claims no actor.
package admission

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Defaults of a Submitters cache.
const (
	DefaultSubmittersMax = 10_000
	// DefaultSubmittersTTL outlives any close delay (at most 300 s) and a
	// controller that is slow to see a new request.
	DefaultSubmittersTTL = time.Hour
)

// SubmitterLookup reads the submitter recorded for a CommitRequest.
type SubmitterLookup interface {
	Submitter(uid types.UID) (facts.Actor, bool)
}

// Submitters is the bounded in-process record of CommitRequest submitters:
// least recently used beyond Max, forgotten after TTL.
type Submitters struct {
	ttl   time.Duration
	cache *cache.LRUExpireCache
}

var _ SubmitterLookup = (*Submitters)(nil)

// NewSubmitters builds a cache of at most max submitters kept ttl (the
// defaults for zero), on c (the real clock for nil).
func NewSubmitters(max int, ttl time.Duration, c clock.PassiveClock) *Submitters {
	if max <= 0 {
		max = DefaultSubmittersMax
	}
	if ttl <= 0 {
		ttl = DefaultSubmittersTTL
	}
	if c == nil {
		c = clock.RealClock{}
	}
	return &Submitters{ttl: ttl, cache: cache.NewLRUExpireCacheWithClock(max, c)}
}

// Record keeps who submitted the CommitRequest uid.
func (s *Submitters) Record(uid types.UID, actor facts.Actor) { s.cache.Add(uid, actor, s.ttl) }

// Submitter is who submitted the CommitRequest uid, if recorded.
func (s *Submitters) Submitter(uid types.UID) (facts.Actor, bool) {
	v, ok := s.cache.Get(uid)
	if !ok {
		return facts.Actor{}, false
	}
	return v.(facts.Actor), true
}
