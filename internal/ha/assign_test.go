package ha_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/ha"
)

// ownedBy are the keys of ks that members give to member.
func ownedBy(members []string, member string, ks []ha.BranchKey) map[ha.BranchKey]bool {
	out := map[ha.BranchKey]bool{}
	for _, k := range ks {
		if ha.Owner(members, k) == member {
			out[k] = true
		}
	}
	return out
}

func TestDecide(t *testing.T) {
	ks := keys(60)
	three := []string{"pod-a", "pod-b", "pod-c"}
	two := []string{"pod-a", "pod-c"}
	gone := ha.BranchKey{ProviderNamespace: "team-x", Provider: "deleted", Branch: "main"}
	withGone := func(owned map[ha.BranchKey]bool) map[ha.BranchKey]bool {
		owned[gone] = true
		return owned
	}
	live := func(members ...string) ha.View {
		return ha.View{Version: 1, Self: "pod-a", SelfLive: true, Members: members}
	}
	tests := []struct {
		name          string
		view          ha.View
		owned         map[ha.BranchKey]bool
		take, release map[ha.BranchKey]bool
	}{
		{name: "first view: take my share", view: live(three...), owned: nil,
			take: ownedBy(three, "pod-a", ks)},
		{name: "steady: nothing to do", view: live(three...), owned: ownedBy(three, "pod-a", ks)},
		{name: "a member lost: take my share of its branches", view: live(two...), owned: ownedBy(three, "pod-a", ks),
			take: minus(ownedBy(two, "pod-a", ks), ownedBy(three, "pod-a", ks))},
		{name: "a member joined: release what it wins", view: live(three...), owned: ownedBy(two, "pod-a", ks),
			release: minus(ownedBy(two, "pod-a", ks), ownedBy(three, "pod-a", ks))},
		{name: "a branch that is gone is released", view: live(three...), owned: withGone(ownedBy(three, "pod-a", ks)),
			release: map[ha.BranchKey]bool{gone: true}},
		{name: "not live in my own view: release all", view: ha.View{Version: 3, Self: "pod-a", Members: []string{"pod-b", "pod-c"}},
			owned: ownedBy(three, "pod-a", ks), release: ownedBy(three, "pod-a", ks)},
		{name: "before the first view: nothing", view: ha.View{Self: "pod-a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			take, release := ha.Decide(tc.view, ks, tc.owned)
			require.ElementsMatch(t, keysOf(tc.take), take)
			require.ElementsMatch(t, keysOf(tc.release), release)
			require.IsNonDecreasing(t, stringsOf(take), "sorted")
			require.IsNonDecreasing(t, stringsOf(release), "sorted")
		})
	}
}

func TestDecidedReplicasOwnEveryBranchExactlyOnce(t *testing.T) {
	ks := keys(500)
	members := []string{"pod-a", "pod-b", "pod-c"}
	seen := map[ha.BranchKey]int{}
	for _, self := range members {
		take, release := ha.Decide(ha.View{Version: 1, Self: self, SelfLive: true, Members: members}, ks, nil)
		require.Empty(t, release)
		for _, k := range take {
			seen[k]++
		}
	}
	require.Len(t, seen, len(ks))
	for k, n := range seen {
		require.Equal(t, 1, n, "%s taken %d times", k, n)
	}
}

func minus(a, b map[ha.BranchKey]bool) map[ha.BranchKey]bool {
	out := map[ha.BranchKey]bool{}
	for k := range a {
		if !b[k] {
			out[k] = true
		}
	}
	return out
}

func keysOf(set map[ha.BranchKey]bool) []ha.BranchKey {
	var out []ha.BranchKey
	for k := range set {
		out = append(out, k)
	}
	return out
}

func stringsOf(ks []ha.BranchKey) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.ProviderNamespace + "\x00" + k.Provider + "\x00" + k.Branch
	}
	return out
}

// BenchmarkDecide is the owner code's cost per view: 500 branches over
// three members, this replica owning its share.
func BenchmarkDecide(b *testing.B) {
	ks := keys(500)
	members := []string{"pod-a", "pod-b", "pod-c"}
	view := ha.View{Version: 2, Self: "pod-a", SelfLive: true, Members: members}
	owned := ownedBy(members[:2], "pod-a", ks)
	b.ReportAllocs()
	for b.Loop() {
		ha.Decide(view, ks, owned)
	}
}
