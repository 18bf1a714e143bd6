package attribution

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// TestEveryVersionOfAnObjectKeepsItsAuthor: the (uid, rv) slots of one
// uid are one list; each version is found, an earlier writer of a version
// in the middle takes it, and versions expire one by one from the oldest.
func TestEveryVersionOfAnObjectKeepsItsAuthor(t *testing.T) {
	f := newFixture()
	f.apply(
		withUID(fact("v1", "update", alice, 0), "u1", "1"),
		withUID(fact("v2", "update", bob, time.Minute), "u1", "2"),
		withUID(fact("v3", "update", carol, 2*time.Minute), "u1", "3"),
		// A no-op patch returning version 2 later, then the write that
		// produced it arriving late: the earliest keeps the version.
		withUID(fact("v2-noop", "patch", carol, 90*time.Second), "u1", "2"),
		withUID(fact("v2-first", "update", finalize, 30*time.Second), "u1", "2"),
	)
	exact := func(rv string) Resolution {
		q := event(false, "u1", rv, false)
		q.Received = f.clock.Now().Add(-3 * time.Second)
		return f.resolver.Resolve(context.Background(), q)
	}
	require.Equal(t, alice, exact("1").Actor)
	require.Equal(t, finalize, exact("2").Actor)
	require.Equal(t, "v2-first", exact("2").AuditID)
	require.Equal(t, carol, exact("3").Actor)

	f.clock.Step(5*time.Minute + 45*time.Second) // past v1's and v2-first's TTL
	f.index.Sweep()
	require.Equal(t, TierAbsent, exact("1").Tier)
	require.Equal(t, TierAbsent, exact("2").Tier)
	require.Equal(t, carol, exact("3").Actor)
	f.clock.Step(2 * time.Minute)
	f.index.Sweep()
	require.Zero(t, f.index.Len())
}

// TestAReReadStreamFilesNothingTwice: a follower that reads a batch again
// after a reconnect adds no fact and counts none, whatever key the facts
// are filed under and whatever form their audit ids take.
func TestAReReadStreamFilesNothingTwice(t *testing.T) {
	f := newFixture()
	rvOnly := fact("B0D3F5A1-0000-4000-8000-000000000001", "update", bob, 0) // not canonical: kept as text
	rvOnly.Name, rvOnly.ResourceVersion = "", "77"
	nameOnly := fact("client-chosen-id", "update", carol, 0)
	batch := []facts.Fact{
		withUID(fact("0f8fad5b-d9cb-469f-a165-70867728950e", "update", alice, 0), "u1", "5"),
		withUID(fact("7c9e6679-7425-40de-944b-e07fc1f90ae7", "delete", alice, time.Second), "u1", "6"),
		collection("e4eaaaf2-d142-11e1-b3e4-080027620cdd", carol, 0, "app=web", "u2", "u3"),
		collection("16fd2706-8baf-433b-82eb-8c7fada847da", bob, 0, "app=web"),
		rvOnly, nameOnly,
	}
	f.index.Apply(configmaps, batch)
	require.Equal(t, len(batch), f.index.Len())
	require.Equal(t, len(batch), f.obs.written)

	f.index.Apply(configmaps, batch)
	require.Equal(t, len(batch), f.index.Len())
	require.Equal(t, len(batch), f.obs.written)

	q := event(false, "", "77", false)
	q.Name, q.Received = "", t0.Add(-3*time.Second)
	got := f.resolver.Resolve(context.Background(), q)
	require.Equal(t, TierResourceVersion, got.Tier)
	require.Equal(t, rvOnly.AuditID, got.AuditID, "an audit id that is not a canonical uuid comes back as it came")
}

// TestFactsWithoutAUIDFollowTheirKeysRules: by resourceVersion the
// earliest writer keeps the version; by name the latest writer wins; a
// scope collection leaves its namespace when it expires.
func TestFactsWithoutAUIDFollowTheirKeysRules(t *testing.T) {
	f := newFixture()
	byRV := func(id string, actor facts.Actor, offset time.Duration) facts.Fact {
		x := fact(id, "update", actor, offset)
		x.Name, x.ResourceVersion = "", "9"
		return x
	}
	f.apply(byRV("r-late", bob, 2*time.Second), byRV("r-first", alice, time.Second), byRV("r-later", carol, 3*time.Second),
		fact("n1", "update", alice, 0), fact("n2", "update", bob, time.Second), fact("n0", "update", carol, -time.Second),
		collection("scope", carol, 0, "app=web"))
	require.Equal(t, 3, f.index.Len(), "r-first, n2 and the scope collection: the others lost their only key")

	past := t0.Add(-3 * time.Second)
	q := event(false, "", "9", false)
	q.Name, q.Received = "", past
	require.Equal(t, alice, f.resolver.Resolve(context.Background(), q).Actor)

	q = event(false, "", "", false)
	q.Received = past
	got := f.resolver.Resolve(context.Background(), q)
	require.Equal(t, TierName, got.Tier)
	require.Equal(t, bob, got.Actor)

	removal := event(true, "u9", "", false)
	removal.Name, removal.Received = "other", t0
	require.Equal(t, TierDeleteCollectionScope, f.resolver.Resolve(context.Background(), removal).Tier)

	f.clock.Step(6 * time.Minute)
	f.index.Sweep()
	require.Zero(t, f.index.Len())
}

// TestAnEarlierRemovalTakesTheStickySlot: of two removals naming one uid
// the earliest keeps the slot, whichever arrives first; the one that lost
// it everywhere is forgotten.
func TestAnEarlierRemovalTakesTheStickySlot(t *testing.T) {
	f := newFixture()
	f.apply(collection("late", bob, 2*time.Second, "", "u1"), withUID(fact("first", "delete", alice, time.Second), "u1", "4"))
	removal := event(true, "u1", "5", false)
	got := f.resolver.Resolve(context.Background(), removal)
	require.Equal(t, TierDeleteSticky, got.Tier)
	require.Equal(t, alice, got.Actor)
	require.Equal(t, 1, f.index.Len(), "the later collection held nothing else")
}

func TestAuditIDsComeBackAsTheyCame(t *testing.T) {
	for _, id := range []string{"", "0f8fad5b-d9cb-469f-a165-70867728950e", "0F8FAD5B-D9CB-469F-A165-70867728950E",
		"00000000-0000-0000-0000-000000000000", "urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e", "mine"} {
		require.Equal(t, id, newAuditID(id).String())
	}
	require.Empty(t, newAuditID("0f8fad5b-d9cb-469f-a165-70867728950e").text, "a canonical uuid is held in 16 bytes")
}
