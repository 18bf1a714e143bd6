package attribution

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// TestAnExpiredFactIsNeverReturnedBeforeTheSweep: expiry is checked on
// read; the sweep then drops the fact and counts it.
func TestAnExpiredFactIsNeverReturnedBeforeTheSweep(t *testing.T) {
	f := newFixture()
	f.apply(withUID(fact("w", "update", bob, 0), "u1", "5"))
	f.clock.Step(5 * time.Minute)

	q := event(false, "u1", "5", false)
	q.Received = f.clock.Now().Add(-3 * time.Second)
	require.Equal(t, TierAbsent, f.resolver.Resolve(context.Background(), q).Tier)
	require.Equal(t, 1, f.index.Len(), "not swept yet")

	f.index.Sweep()
	require.Zero(t, f.index.Len())
	require.Equal(t, 1, f.obs.evictions(EvictedExpired))
}

// TestTheStickyRemovalSlotOutlivesTheTTL: a delete fact is still the
// deleter after the TTL and a sweep; only its TTL'd keys are gone.
func TestTheStickyRemovalSlotOutlivesTheTTL(t *testing.T) {
	f := newFixture()
	f.apply(withUID(fact("d", "delete", alice, 0), "u1", "10"), collection("c", carol, 0, "", "u2"))
	f.clock.Step(10 * time.Minute)
	f.index.Sweep()
	require.Equal(t, 2, f.index.Len())
	require.Zero(t, f.obs.evictions(EvictedExpired))

	past := f.clock.Now().Add(-3 * time.Second)
	removal := event(true, "u1", "11", false)
	removal.Received = past
	got := f.resolver.Resolve(context.Background(), removal)
	require.Equal(t, TierDeleteSticky, got.Tier)
	require.Equal(t, alice, got.Actor)

	removal.UID = "u2"
	require.Equal(t, TierDeleteCollectionUID, f.resolver.Resolve(context.Background(), removal).Tier)

	modified := event(false, "u1", "10", false)
	modified.Received = past
	require.Equal(t, TierAbsent, f.resolver.Resolve(context.Background(), modified).Tier, "the exact key expired")
}

// TestApplyTrimsExpiredFactsFromTheOldestEnd: without a sweep, applying a
// new fact drops the expired ones before it.
func TestApplyTrimsExpiredFactsFromTheOldestEnd(t *testing.T) {
	f := newFixture()
	f.apply(withUID(fact("a", "update", bob, 0), "u1", "5"), withUID(fact("b", "update", bob, 0), "u2", "5"))
	f.clock.Step(6 * time.Minute)
	f.apply(withUID(fact("c", "update", bob, 6*time.Minute), "u3", "5"))
	require.Equal(t, 1, f.index.Len())
	require.Equal(t, 2, f.obs.evictions(EvictedExpired))
}

// TestCapsEvictTheOldestFacts: the per-type cap evicts the stream's oldest
// fact, the total cap the oldest of all, each counted by reason; an
// evicted sticky delete goes with it.
func TestCapsEvictTheOldestFacts(t *testing.T) {
	f := newFixture()
	f.index.MaxPerStream, f.index.MaxTotal = 2, 3
	f.apply(withUID(fact("d", "delete", alice, 0), "u0", "1"))
	for i := 1; i <= 2; i++ {
		f.apply(withUID(fact(fmt.Sprintf("w%d", i), "update", bob, time.Duration(i)*time.Second), fmt.Sprintf("u%d", i), "1"))
	}
	require.Equal(t, 2, f.index.Len())
	require.Equal(t, 1, f.obs.evictions(EvictedTypeCap))
	require.Equal(t, TierAbsent, f.resolver.Resolve(context.Background(), event(true, "u0", "2", true)).Tier,
		"the oldest, the delete, was evicted")

	other := withUID(fact("s1", "update", carol, 3*time.Second), "s1", "1")
	other.Stream = secrets
	f.apply(other)
	other = withUID(fact("s2", "update", carol, 4*time.Second), "s2", "1")
	other.Stream = secrets
	f.apply(other)
	require.Equal(t, 3, f.index.Len())
	require.Equal(t, 1, f.obs.evictions(EvictedTotalCap))
	require.Equal(t, TierAbsent, f.resolver.Resolve(context.Background(), event(false, "u1", "1", true)).Tier)
	require.Equal(t, TierExact, f.resolver.Resolve(context.Background(), event(false, "u2", "1", true)).Tier)
	require.Equal(t, 3, f.obs.entries)
}

// TestLastWriterWinsByStageTime: per uid the latest stage time wins,
// whatever order the facts arrive in, and a fact applied twice is filed
// once; a version keeps the first write that produced it (a no-op write
// later returns it again), and a fact replaced everywhere is forgotten.
func TestLastWriterWinsByStageTime(t *testing.T) {
	f := newFixture()
	newer := withUID(fact("new", "patch", carol, 2*time.Second), "u1", "7")
	older := withUID(fact("old", "patch", bob, time.Second), "u1", "6")
	f.apply(newer, older, newer)
	withoutRV := event(false, "u1", "", true)
	got := f.resolver.Resolve(context.Background(), withoutRV)
	require.Equal(t, TierLatest, got.Tier)
	require.Equal(t, carol, got.Actor)
	require.Equal(t, 2, f.index.Len(), "the older still holds (u1, 6)")
	require.Equal(t, 2, f.obs.written)

	noop := withUID(fact("noop", "patch", alice, 3*time.Second), "u1", "6")
	f.apply(noop)
	exact := f.resolver.Resolve(context.Background(), event(false, "u1", "6", true))
	require.Equal(t, TierExact, exact.Tier)
	require.Equal(t, bob, exact.Actor, "a no-op patch returning version 6 did not produce it")
	latest := f.resolver.Resolve(context.Background(), withoutRV)
	require.Equal(t, alice, latest.Actor, "but alice is the last to have written the object")
	require.Equal(t, 3, f.index.Len(), "newer lost (u1) to the no-op but keeps (u1, 7)")

	f.apply(withUID(fact("newest", "patch", carol, 4*time.Second), "u1", "9"))
	require.Equal(t, 3, f.index.Len(), "noop lost (u1), its only key: it is gone")
}

// TestAFactWithoutAnyKeyIsNotFiled: nothing could read it.
func TestAFactWithoutAnyKeyIsNotFiled(t *testing.T) {
	f := newFixture()
	f.index.Apply(configmaps, []facts.Fact{{AuditID: "x", Verb: "update", Actor: bob, Stage: t0}})
	require.Zero(t, f.index.Len())
}

// TestThePeriodicSweepDropsExpiredFacts: with no Apply to trim them, the
// sweeper drops an expired fact on its next tick and stops with ctx.
func TestThePeriodicSweepDropsExpiredFacts(t *testing.T) {
	f := newFixture()
	f.obs.evictedCh = make(chan EvictionReason, 1)
	f.apply(withUID(fact("w", "update", bob, 0), "u1", "5"))
	ctx, cancel := context.WithCancel(context.Background())
	done := f.index.StartSweeping(ctx, time.Minute)

	f.clock.Step(4 * time.Minute)
	f.clock.Step(time.Minute)
	require.Equal(t, EvictedExpired, <-f.obs.evictedCh)
	require.Zero(t, f.index.Len())
	cancel()
	<-done
}
