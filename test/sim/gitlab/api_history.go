package gitlab

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// getMergeBase answers GET /projects/:id/repository/merge_base?refs[]=a&refs[]=b,
// each ref a branch name or a commit SHA:
// https://docs.gitlab.com/api/repositories/#merge-base. Fewer than two refs
// is 400 "Provide at least 2 refs"; refs the project does not have are 400
// "Could not find ref(s): ..."; refs with no common ancestor are 404
// "404 Merge Base Not Found" (lib/api/repositories.rb in gitlab-org/gitlab).
// Like GitLab it takes the common ancestor of the first two refs only when
// two are given, which is all a client of this simulator sends.
func (s *Server) getMergeBase(w http.ResponseWriter, q url.Values, p *project) {
	refs := q["refs[]"]
	if len(refs) < 2 {
		writeMessage(w, http.StatusBadRequest, "Provide at least 2 refs")
		return
	}
	var commits []*object.Commit
	var unknown []string
	for _, ref := range refs[:2] {
		c, ok := p.resolve(ref)
		if !ok {
			unknown = append(unknown, ref)
			continue
		}
		commits = append(commits, c)
	}
	switch len(unknown) {
	case 0:
	case 1:
		writeMessage(w, http.StatusBadRequest, "Could not find ref: "+unknown[0])
		return
	default:
		writeMessage(w, http.StatusBadRequest, "Could not find refs: "+strings.Join(unknown, ", "))
		return
	}
	base, ok := p.MergeBase(commits[0].Hash, commits[1].Hash)
	if !ok {
		writeMessage(w, http.StatusNotFound, "404 Merge Base Not Found")
		return
	}
	c, err := p.Commit(base)
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s.commitJSON(p, c))
}
