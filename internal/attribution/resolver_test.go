package attribution

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// TestEveryTierIsReachedByItsEvent: each row's facts are in the index
// before the event, whose grace is already over, so the first lookup's
// answer is the resolution.
func TestEveryTierIsReachedByItsEvent(t *testing.T) {
	nameOnly := func(id, verb string, actor facts.Actor) facts.Fact { return fact(id, verb, actor, 0) }
	rvOnly := func(id, verb, rv string, actor facts.Actor) facts.Fact {
		f := fact(id, verb, actor, 0)
		f.Name, f.ResourceVersion = "", rv
		return f
	}
	cases := []struct {
		name  string
		facts []facts.Fact
		event Query
		tier  Tier
		actor facts.Actor
	}{
		{"a delete takes the sticky slot", []facts.Fact{withUID(fact("d", "delete", alice, 0), "u1", "10")},
			event(true, "u1", "11", true), TierDeleteSticky, alice},
		{"an update joins its own version", []facts.Fact{withUID(fact("w", "update", bob, 0), "u1", "5")},
			event(false, "u1", "5", true), TierExact, bob},
		{"a delete that set the deletionTimestamp authors that version",
			[]facts.Fact{withUID(fact("d", "delete", alice, 0), "u1", "10")},
			event(false, "u1", "10", true), TierExact, alice},
		{"a removal named in a collection's uid set", []facts.Fact{collection("c", carol, 0, "app=web", "u0", "u1")},
			event(true, "u1", "9", true), TierDeleteCollectionUID, carol},
		// Rule b: a write fact never names who removed the object.
		{"a removal with only the uid's write fact is unresolved", []facts.Fact{withUID(fact("w", "patch", bob, 0), "u1", "5")},
			event(true, "u1", "6", true), TierAbsent, facts.Actor{}},
		{"a removal with only a write fact by name is unresolved", []facts.Fact{nameOnly("w", "create", bob)},
			event(true, "u1", "6", true), TierAbsent, facts.Actor{}},
		{"a removal with only a write fact for its rv is unresolved", []facts.Fact{rvOnly("w", "update", "78", bob)},
			event(true, "u1", "78", true), TierAbsent, facts.Actor{}},
		{"a write without an rv takes the uid pointer", []facts.Fact{withUID(fact("w", "patch", bob, 0), "u1", "5")},
			event(false, "u1", "", true), TierLatest, bob},
		{"an aggregated API's create by name", []facts.Fact{nameOnly("w", "create", bob)},
			event(false, "u1", "5", true), TierName, bob},
		{"an aggregated API's delete by name", []facts.Fact{nameOnly("d", "delete", alice)},
			event(true, "u1", "6", true), TierName, alice},
		{"a removal covered by a collection's scope", []facts.Fact{collection("c", carol, 0, "app=web")},
			event(true, "u1", "9", true), TierDeleteCollectionScope, carol},
		{"a write by its rv when the fact has no uid", []facts.Fact{rvOnly("w", "update", "77", bob)},
			event(false, "u1", "77", true), TierResourceVersion, bob},
		{"a removal by its rv when the delete fact has no uid", []facts.Fact{rvOnly("d", "delete", "78", alice)},
			event(true, "u1", "78", true), TierResourceVersion, alice},
		{"nothing arrived", nil, event(false, "u1", "5", true), TierAbsent, facts.Actor{}},
		// Rule c: a create or update never takes an older author.
		{"an update whose exact fact is missing is not the uid's last writer",
			[]facts.Fact{withUID(fact("w", "update", bob, 0), "u1", "5")},
			event(false, "u1", "6", true), TierAbsent, facts.Actor{}},
		{"an update never takes the object's delete fact",
			[]facts.Fact{withUID(fact("d", "delete", alice, 0), "u1", "10")},
			event(false, "u1", "12", true), TierAbsent, facts.Actor{}},
		{"a create never takes a collection naming its uid", []facts.Fact{collection("c", carol, 0, "app=web", "u1")},
			event(false, "u1", "12", true), TierAbsent, facts.Actor{}},
		{"a recreate is not the earlier incarnation's deleter by name", []facts.Fact{nameOnly("d", "delete", alice)},
			event(false, "u2", "1", true), TierAbsent, facts.Actor{}},
		// The scope tier's limits.
		{"a collection outside the grace of the event", []facts.Fact{collection("c", carol, 10*time.Second, "app=web")},
			event(true, "u1", "9", true), TierAbsent, facts.Actor{}},
		{"a collection whose selector does not match", []facts.Fact{collection("c", carol, 0, "app=db")},
			event(true, "u1", "9", true), TierAbsent, facts.Actor{}},
		{"a collection whose uid set leaves the object out", []facts.Fact{collection("c", carol, 0, "app=web", "u7")},
			event(true, "u1", "9", true), TierAbsent, facts.Actor{}},
		{"two actors' collections covering the object are no answer",
			[]facts.Fact{collection("c1", carol, 0, "app=web"), collection("c2", bob, -time.Second, "")},
			event(true, "u1", "9", true), TierAbsent, facts.Actor{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			f.apply(tc.facts...)
			got := f.resolver.Resolve(context.Background(), tc.event)
			require.Equal(t, tc.tier, got.Tier)
			require.Equal(t, tc.actor, got.Actor)
			require.Zero(t, got.Waited, "an event whose grace is over does not wait")
		})
	}
}

// TestAFinalizerPatchDoesNotReplaceTheDeleter (rule a): the finalizer
// controller's patch carries the same uid and rv as alice's delete and a
// later stage time; the removal is still alice's, in either arrival order.
func TestAFinalizerPatchDoesNotReplaceTheDeleter(t *testing.T) {
	del := withUID(fact("d", "delete", alice, 0), "u1", "10")
	patch := withUID(fact("p", "patch", finalize, time.Second), "u1", "10")
	for name, order := range map[string][]facts.Fact{"delete first": {del, patch}, "patch first": {patch, del}} {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.apply(order...)
			got := f.resolver.Resolve(context.Background(), event(true, "u1", "10", false))
			require.Equal(t, TierDeleteSticky, got.Tier)
			require.Equal(t, alice, got.Actor)
		})
	}
}

// TestARemovalWithOnlyWriteFactsIsUnresolved (rule b): a later write
// wakes the waiter without ending the wait, and the grace's end leaves the
// removal unresolved: the last writer is not the deleter.
func TestARemovalWithOnlyWriteFactsIsUnresolved(t *testing.T) {
	f := newFixture()
	f.apply(withUID(fact("w1", "patch", bob, 0), "u1", "5"))
	done := f.resolve(context.Background(), event(true, "u1", "6", false))

	f.asleepOn(t, done)
	f.apply(withUID(fact("w2", "patch", carol, time.Second), "u1", "6"))
	f.asleepOn(t, done) // woken by the write, asleep again: a write is no deletion evidence
	f.clock.Step(3 * time.Second)

	got := <-done
	require.Equal(t, TierAbsent, got.Tier)
	require.Equal(t, facts.Actor{}, got.Actor)
	require.Equal(t, 3*time.Second, got.Waited)
}

// TestDeleteEvidenceDuringTheWaitBeatsTheHeldWrite (rule b): the delete
// fact arrives while the removal waits and is returned at once.
func TestDeleteEvidenceDuringTheWaitBeatsTheHeldWrite(t *testing.T) {
	cases := map[string]struct {
		evidence facts.Fact
		tier     Tier
	}{
		"a delete":                    {withUID(fact("d", "delete", alice, time.Second), "u1", "6"), TierDeleteSticky},
		"a collection naming the uid": {collection("c", alice, time.Second, "", "u1"), TierDeleteCollectionUID},
		"a collection by scope":       {collection("c", alice, time.Second, "app=web"), TierDeleteCollectionScope},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture()
			f.apply(withUID(fact("w", "patch", bob, 0), "u1", "5"))
			done := f.resolve(context.Background(), event(true, "u1", "6", false))

			f.asleepOn(t, done)
			f.apply(tc.evidence)
			got := <-done
			require.Equal(t, tc.tier, got.Tier)
			require.Equal(t, alice, got.Actor)
			require.Zero(t, got.Waited)
			require.Equal(t, t0, f.clock.Now(), "the clock never reached the grace")
		})
	}
}

// TestACreateWhoseExactFactIsLateWaitsThenIsAbsent (rule c): an older
// author by uid is in the index the whole time; the create waits for its
// own fact and, when the grace ends without it, is absent.
func TestACreateWhoseExactFactIsLateWaitsThenIsAbsent(t *testing.T) {
	f := newFixture()
	f.apply(withUID(fact("old", "update", bob, 0), "u1", "5"))
	done := f.resolve(context.Background(), event(false, "u1", "6", false))

	f.asleepOn(t, done)
	f.clock.Step(3 * time.Second)
	got := <-done
	require.Equal(t, TierAbsent, got.Tier)
	require.Equal(t, facts.Actor{}, got.Actor)
	require.Equal(t, "none", got.ActorKind())
}

// TestAFactArrivingDuringTheWaitWakesTheWaiter: the waiter returns on the
// fact, with a fake clock that was never stepped; a fact of another object
// or type does not end its wait.
func TestAFactArrivingDuringTheWaitWakesTheWaiter(t *testing.T) {
	f := newFixture()
	done := f.resolve(context.Background(), event(false, "u1", "6", false))

	f.asleepOn(t, done)
	other := withUID(fact("other", "update", carol, 0), "u1", "6")
	other.Stream = secrets
	f.apply(other, withUID(fact("u2", "update", carol, 0), "u2", "6"))
	f.apply(withUID(fact("mine", "update", bob, 0), "u1", "6"))

	got := <-done
	require.Equal(t, TierExact, got.Tier)
	require.Equal(t, bob, got.Actor)
	require.Equal(t, "mine", got.AuditID)
	require.Zero(t, got.Waited)
	require.Equal(t, t0, f.clock.Now(), "the clock was never stepped to the grace")
	require.Zero(t, f.index.waiting(), "the waiter is unregistered")
}

// TestTheGraceRunsFromReceived: an event that sat queued behind another
// waits only what is left of its grace.
func TestTheGraceRunsFromReceived(t *testing.T) {
	f := newFixture()
	q := event(false, "u1", "6", false)
	q.Received = t0.Add(-2 * time.Second)
	done := f.resolve(context.Background(), q)
	f.asleepOn(t, done)
	f.clock.Step(time.Second)
	got := <-done
	require.Equal(t, TierAbsent, got.Tier)
	require.Equal(t, time.Second, got.Waited)
}

// TestAnEndedContextEndsTheWait: a stopping stream does not sit out the
// grace; the removal, with only a write fact, is unresolved.
func TestAnEndedContextEndsTheWait(t *testing.T) {
	f := newFixture()
	f.apply(withUID(fact("w", "patch", bob, 0), "u1", "5"))
	ctx, cancel := context.WithCancel(context.Background())
	done := f.resolve(ctx, event(true, "u1", "6", false))
	f.asleepOn(t, done)
	cancel()
	got := <-done
	require.Equal(t, TierAbsent, got.Tier)
	require.Equal(t, facts.Actor{}, got.Actor)
}

func TestActorKind(t *testing.T) {
	require.Equal(t, "user", Resolution{Tier: TierExact, Actor: alice}.ActorKind())
	require.Equal(t, "serviceaccount", Resolution{Tier: TierExact, Actor: finalize}.ActorKind())
	require.Equal(t, "none", Resolution{Tier: TierAbsent}.ActorKind())
}

// TestManyAppliersAndResolversAtOnce (run with -race): every resolver
// waits for its own exact fact, which one of several appliers files;
// each gets its own author, with sweeps running alongside.
func TestManyAppliersAndResolversAtOnce(t *testing.T) {
	f := newFixture()
	f.resolver.sleeping = nil
	const objects, appliers = 200, 4
	actors := []facts.Actor{alice, bob, carol, finalize}
	results := make([]Resolution, objects)
	var wg sync.WaitGroup
	for i := range objects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = f.resolver.Resolve(context.Background(), event(false, fmt.Sprintf("u%d", i), "1", false))
		}()
	}
	for a := range appliers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := a; i < objects; i += appliers {
				fa := withUID(fact(fmt.Sprintf("f%d", i), "update", actors[i%len(actors)], 0), fmt.Sprintf("u%d", i), "1")
				f.index.Apply(configmaps, []facts.Fact{fa})
				f.index.Sweep()
			}
		}()
	}
	wg.Wait()
	for i, got := range results {
		require.Equal(t, TierExact, got.Tier, "object %d", i)
		require.Equal(t, actors[i%len(actors)], got.Actor, "object %d", i)
	}
	require.Zero(t, f.index.waiting())
}
