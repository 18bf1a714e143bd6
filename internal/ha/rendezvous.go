package ha

import (
	"github.com/cespare/xxhash/v2"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

// BranchKey names the unit of assignment: one branch of one GitProvider.
// It is the branch worker's own key (branch.Key), so the engine hands its
// workers' keys over unchanged.
type BranchKey = branch.Key

// Owner is the member that owns key among members: the one with the highest
// weight(member, key) (rendezvous, or highest-random-weight, hashing). Every
// replica that sees the same members computes the same owner, with no
// coordination; adding or removing a member moves only the keys that member
// gains or loses, about 1/N of them. No member: "". Duplicates in members
// change nothing.
func Owner(members []string, key BranchKey) string {
	best, bestWeight := "", uint64(0)
	for _, m := range members {
		w := weight(m, key)
		// Ties (a 2^-64 chance) go to the smaller name, so the answer does
		// not depend on the order of members.
		if best == "" || w > bestWeight || (w == bestWeight && m < best) {
			best, bestWeight = m, w
		}
	}
	return best
}

// weight is the stable 64-bit hash of (member, key). The parts are joined
// with NUL, which neither a Kubernetes name nor a Git branch may contain,
// so two different tuples never hash the same bytes. xxhash is stable
// across processes, architectures and versions (its output is specified),
// which every replica agreeing depends on.
func weight(member string, key BranchKey) uint64 {
	d := xxhash.New()
	for i, s := range [...]string{member, key.ProviderNamespace, key.Provider, key.Branch} {
		if i > 0 {
			_, _ = d.Write([]byte{0})
		}
		_, _ = d.WriteString(s)
	}
	return d.Sum64()
}
