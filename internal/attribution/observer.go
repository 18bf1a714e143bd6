package attribution

import (
	"time"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// EvictionReason says why the index dropped a fact
// (attribution_fact_index_evictions_total{reason}).
type EvictionReason string

const (
	// EvictedExpired: the fact outlived the TTL (the sticky removal slot
	// aside, which the TTL does not bound).
	EvictedExpired EvictionReason = "expired"
	// EvictedTypeCap: its stream held more facts than the per-type cap.
	EvictedTypeCap EvictionReason = "type_cap"
	// EvictedTotalCap: the index held more facts than the total cap.
	EvictedTotalCap EvictionReason = "total_cap"
)

// EvictionReasons are every EvictionReason, for zero series.
var EvictionReasons = []EvictionReason{EvictedExpired, EvictedTypeCap, EvictedTotalCap}

// Observer is told what the index, the resolver and the follower do;
// internal/metrics implements it. Calls come from many goroutines.
type Observer interface {
	// FactsWritten: n facts were filed into the index.
	FactsWritten(n int)
	// IndexEntries: the index now holds n facts.
	IndexEntries(n int)
	// Evicted: one fact was dropped for reason.
	Evicted(reason EvictionReason)
	// Resolved: one watch event was resolved.
	Resolved(q Query, r Resolution)
	// StreamGap: the transport lost facts of stream to retention (lost is
	// 0 when it cannot say how many).
	StreamGap(stream facts.StreamKey, lost int)
	// FollowerError: following a stream through transport failed or ended
	// before it was stopped; the follower retries.
	FollowerError(transport string, stream facts.StreamKey, err error)
	// FollowerLag: a delivery through transport reached the index lag after
	// its newest fact's stage time (the audit batch delay plus the
	// transport's; a restart's re-warm shows as one large lag).
	FollowerLag(transport string, lag time.Duration)
	// SettleBarrier: an event's settle ended early, every review published
	// before it having reached the index (reached), or the barrier failed
	// or outlasted the settle (not reached).
	SettleBarrier(reached bool)
}

// NopObserver observes nothing.
type NopObserver struct{}

func (NopObserver) FactsWritten(int)                             {}
func (NopObserver) IndexEntries(int)                             {}
func (NopObserver) Evicted(EvictionReason)                       {}
func (NopObserver) Resolved(Query, Resolution)                   {}
func (NopObserver) StreamGap(facts.StreamKey, int)               {}
func (NopObserver) FollowerError(string, facts.StreamKey, error) {}
func (NopObserver) FollowerLag(string, time.Duration)            {}
func (NopObserver) SettleBarrier(bool)                           {}
