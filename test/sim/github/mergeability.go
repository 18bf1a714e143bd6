package github

import (
	"github.com/go-git/go-git/v5/plumbing"
)

// Mergeability of a pull request: "The value of the mergeable attribute
// can be true, false, or null. If the value is null, then GitHub has
// started a background job to compute the mergeability. After giving the
// job time to complete, resubmit the request. When the job finishes, you
// will see a non-null value for the mergeable attribute in the response"
// ("Get a pull request", docPulls#get-a-pull-request). The simulator's
// job is the three-way merge of the head into the base
// (gitobjects.MergeFiles): the first full answer after the head or the
// base moved is null and starts it, the next one carries its result
// (true, mergeable_state "clean"; false, "dirty"), one of the schedules
// the documentation allows (WithMergeableAtOnce: the other, where the job
// is done before the first answer). A merged or closed pull request answers null.
// Only the full pull request (get, create, update) carries the attribute:
// the list answers "pull-request-simple", which has none.
type mergeability struct {
	computed   bool
	head, base plumbing.Hash
	clean      bool
}

// fullPullResponse is the pull request with its mergeability.
func (s *Server) fullPullResponse(repo *repository, pr *pullRequest) pullJSON {
	out := s.pullResponse(repo, pr)
	if !pr.open {
		return out
	}
	head, base := pr.headOf(repo), repo.branches[pr.base]
	m := &pr.mergeability
	if !m.computed || m.head != head || m.base != base {
		// The background job starts; its result shows from the next
		// answer on.
		_, conflicts, err := repo.MergeCommits(base, head)
		*m = mergeability{computed: err == nil, head: head, base: base, clean: len(conflicts) == 0}
		if !s.config.mergeableAtOnce || !m.computed {
			return out
		}
	}
	out.Mergeable = new(m.clean)
	out.MergeableState = "dirty"
	if m.clean {
		out.MergeableState = "clean"
	}
	return out
}
