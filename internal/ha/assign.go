package ha

import (
	"slices"
	"strings"
)

// Decide is what this replica should do with its branches under view:
// take the branches rendezvous hashing gives to it (view.Self) that it
// does not own, and release the ones it owns that hashing gives to another
// live member, or that are no longer in branches. A replica that is not
// live in its own view (fenced, suspended, left, or before its first
// view) releases everything and takes nothing. Both lists are sorted.
//
// Decide is only the assignment, not the fence:
//   - taking a branch also needs its per-branch claim in Redis
//     (internal/redisstore/claims.go): a branch is taken only once the
//     claim is won, and the previous owner may hold it until its release
//     or its claim's expiry;
//   - the fence for Git is the forge's compare-and-swap on the branch
//     head: a deposed owner's late commit fails it and is never forced.
//
// Two replicas with different views may both want a branch for a moment;
// the claim decides, and the CAS keeps Git safe whatever happens.
func Decide(view View, branches []BranchKey, owned map[BranchKey]bool) (take, release []BranchKey) {
	if !view.SelfLive {
		for k, own := range owned {
			if own {
				release = append(release, k)
			}
		}
		sortKeys(release)
		return nil, release
	}
	known := make(map[BranchKey]bool, len(branches))
	for _, k := range branches {
		if known[k] {
			continue
		}
		known[k] = true
		mine := Owner(view.Members, k) == view.Self
		switch {
		case mine && !owned[k]:
			take = append(take, k)
		case !mine && owned[k]:
			release = append(release, k)
		}
	}
	for k, own := range owned {
		if own && !known[k] {
			release = append(release, k)
		}
	}
	sortKeys(take)
	sortKeys(release)
	return take, release
}

func sortKeys(keys []BranchKey) {
	slices.SortFunc(keys, func(a, b BranchKey) int {
		if c := strings.Compare(a.ProviderNamespace, b.ProviderNamespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.Provider, b.Provider); c != 0 {
			return c
		}
		return strings.Compare(a.Branch, b.Branch)
	})
}
