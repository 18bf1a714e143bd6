// Package admission serves the /validate-operator-types validating
// admission webhook (architecture.md, "CommitRequest finalize"): it names
// the submitter of each CommitRequest at admission, keyed by the object's
// UID, for the CommitRequest controller to read back. It never denies a
// request; without it a CommitRequest only claims no actor.
package admission

import (
	"context"
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

// SharedSubmitters is a record of submitters every replica reads (Redis).
type SharedSubmitters interface {
	Record(ctx context.Context, uid string, actor facts.Actor) error
	Submitter(ctx context.Context, uid string) (facts.Actor, bool, error)
}

// sharedTimeout bounds one call to the shared record: the webhook answers
// within the API server's timeout, and a controller reconcile is not held
// by a slow Redis.
const sharedTimeout = time.Second

// Submitters is the bounded in-process record of CommitRequest submitters:
// least recently used beyond Max, forgotten after TTL. With Shared set it
// also writes each submitter there and reads one it does not hold from
// there, so the replica that reconciles a request need not be the one that
// admitted it.
type Submitters struct {
	ttl   time.Duration
	cache *cache.LRUExpireCache
	// Shared, when set, is the record other replicas read.
	Shared SharedSubmitters
	// OnError, when set, is told about a failed call to Shared
	// ("submitter_write", "submitter_read"); the in-process record still
	// holds what it can.
	OnError func(op string, err error)
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
func (s *Submitters) Record(uid types.UID, actor facts.Actor) {
	s.cache.Add(uid, actor, s.ttl)
	if s.Shared == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	if err := s.Shared.Record(ctx, string(uid), actor); err != nil {
		s.failed("submitter_write", err)
	}
}

// Submitter is who submitted the CommitRequest uid, if recorded here or
// in the shared record.
func (s *Submitters) Submitter(uid types.UID) (facts.Actor, bool) {
	if v, ok := s.cache.Get(uid); ok {
		return v.(facts.Actor), true
	}
	if s.Shared == nil {
		return facts.Actor{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	actor, ok, err := s.Shared.Submitter(ctx, string(uid))
	if err != nil {
		s.failed("submitter_read", err)
		return facts.Actor{}, false
	}
	if ok {
		s.cache.Add(uid, actor, s.ttl)
	}
	return actor, ok
}

func (s *Submitters) failed(op string, err error) {
	if s.OnError != nil {
		s.OnError(op, err)
	}
}
