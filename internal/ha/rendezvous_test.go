package ha_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/ha"
)

// keys are n branches spread over two namespaces and a few providers.
func keys(n int) []ha.BranchKey {
	out := make([]ha.BranchKey, n)
	for i := range out {
		out[i] = ha.BranchKey{
			ProviderNamespace: fmt.Sprintf("team-%d", i%2),
			Provider:          fmt.Sprintf("provider-%d", i%7),
			Branch:            fmt.Sprintf("branch-%d", i),
		}
	}
	return out
}

func owners(members []string, ks []ha.BranchKey) map[ha.BranchKey]string {
	out := make(map[ha.BranchKey]string, len(ks))
	for _, k := range ks {
		out[k] = ha.Owner(members, k)
	}
	return out
}

func TestOwnerIsDeterministicAndIndependentOfMemberOrder(t *testing.T) {
	ks := keys(200)
	a := owners([]string{"pod-a", "pod-b", "pod-c"}, ks)
	require.Equal(t, a, owners([]string{"pod-c", "pod-a", "pod-b"}, ks), "the order of members does not matter")
	require.Equal(t, a, owners([]string{"pod-b", "pod-c", "pod-a", "pod-b"}, ks), "nor a duplicate")
	// Pinned: the hash is part of the contract between replicas of
	// different builds; a change here reassigns branches in a rolling update.
	k := ha.BranchKey{ProviderNamespace: "team-a", Provider: "github", Branch: "main"}
	require.Equal(t, "pod-b", ha.Owner([]string{"pod-a", "pod-b", "pod-c"}, k))
}

func TestOwnerOfNoMembersIsNobody(t *testing.T) {
	k := ha.BranchKey{ProviderNamespace: "team-a", Provider: "github", Branch: "main"}
	require.Empty(t, ha.Owner(nil, k))
	require.Equal(t, "solo", ha.Owner([]string{"solo"}, k))
}

func TestOwnerTellsTheTupleApart(t *testing.T) {
	// The same characters split differently are different branches: the
	// separator keeps ("a-b", "c") and ("a", "b-c") from hashing alike.
	members := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"}
	differ := 0
	for i := range 64 {
		x := ha.BranchKey{ProviderNamespace: "ns", Provider: fmt.Sprintf("p%d", i), Branch: "main"}
		y := ha.BranchKey{ProviderNamespace: "ns", Provider: "p", Branch: fmt.Sprintf("%dmain", i)}
		if ha.Owner(members, x) != ha.Owner(members, y) {
			differ++
		}
	}
	require.Greater(t, differ, 32, "owners of split-alike tuples are unrelated")
}

func TestOwnerBalancesFiveHundredBranchesOverThreeMembers(t *testing.T) {
	counts := map[string]int{}
	for _, owner := range owners([]string{"pod-a", "pod-b", "pod-c"}, keys(500)) {
		counts[owner]++
	}
	require.Len(t, counts, 3)
	for member, n := range counts {
		// 500/3 ≈ 167; a binomial spread's 4 σ is ±42.
		require.InDelta(t, 167, n, 42, "member %s owns %d of 500", member, n)
	}
}

func TestOwnerMovesOnlyTheKeysOfTheChangedMember(t *testing.T) {
	ks := keys(500)
	three := []string{"pod-a", "pod-b", "pod-c"}
	four := []string{"pod-a", "pod-b", "pod-c", "pod-d"}
	tests := []struct {
		name          string
		before, after []string
		changed       string
	}{
		{name: "a member joins", before: three, after: four, changed: "pod-d"},
		{name: "a member leaves", before: four, after: three, changed: "pod-d"},
		{name: "the middle one leaves", before: three, after: []string{"pod-a", "pod-c"}, changed: "pod-b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, after := owners(tc.before, ks), owners(tc.after, ks)
			moved := 0
			for _, k := range ks {
				if before[k] == after[k] {
					continue
				}
				moved++
				require.True(t, before[k] == tc.changed || after[k] == tc.changed,
					"%s moved from %s to %s, neither of them %s", k, before[k], after[k], tc.changed)
			}
			// About 1/N of the keys: 1/4 of 500 for a fourth member, 1/3
			// for one of three (4 σ of slack).
			n := max(len(tc.before), len(tc.after))
			require.InDelta(t, 500/n, moved, 45, "moved %d of 500", moved)
		})
	}
}
