package github

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// docCompare is "Compare two commits".
const docCompare = "https://docs.github.com/rest/commits/commits#compare-two-commits"

// compareJSON is the part of the comparison the simulator fills in:
// "status" is one of "diverged", "ahead", "behind", "identical", with
// ahead_by and behind_by counting the commits each side has that the
// other lacks (docCompare).
type compareJSON struct {
	URL             string     `json:"url"`
	Status          string     `json:"status"`
	AheadBy         int        `json:"ahead_by"`
	BehindBy        int        `json:"behind_by"`
	TotalCommits    int        `json:"total_commits"`
	MergeBaseCommit commitJSON `json:"merge_base_commit"`
	Commits         []shaURL   `json:"commits"`
	Files           []struct{} `json:"files"`
}

// compareCommits is "Compare two commits": {basehead} is "BASE...HEAD",
// each a branch name or a commit SHA (docCompare). A side the repository
// does not have is 404, and so are two histories with no common ancestor
// (GitHub's message: "No common ancestor between BASE and HEAD."). The
// commits head has and base lacks are paged with per_page and page; the
// listing does not change the status.
func (s *Server) compareCommits(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return
	}
	baseRef, headRef, found := strings.Cut(r.PathValue("basehead"), "...")
	base, baseOK := resolveCommit(repo, baseRef)
	head, headOK := resolveCommit(repo, headRef)
	if !found || !baseOK || !headOK {
		notFound(w, docCompare)
		return
	}
	mergeBase, shared := repo.MergeBase(base, head)
	if !shared {
		writeError(w, http.StatusNotFound, "No common ancestor between "+baseRef+" and "+headRef+".", docCompare)
		return
	}
	ofBase, ofHead := repo.Ancestors(base), repo.Ancestors(head)
	out := compareJSON{URL: s.apiURL(repo, "/compare/%s", r.PathValue("basehead")), Commits: []shaURL{}, Files: []struct{}{}}
	for h := range ofHead {
		if !ofBase[h] {
			out.AheadBy++
			out.Commits = append(out.Commits, shaURL{SHA: h.String(), URL: s.apiURL(repo, "/commits/%s", h)})
		}
	}
	for h := range ofBase {
		if !ofHead[h] {
			out.BehindBy++
		}
	}
	out.TotalCommits = out.AheadBy
	out.Status = compareStatus(out.AheadBy, out.BehindBy)
	out.Commits = page(out.Commits, r)
	var err error
	if out.MergeBaseCommit, err = s.commitResponse(repo, mergeBase); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), docCompare)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func compareStatus(ahead, behind int) string {
	switch {
	case ahead == 0 && behind == 0:
		return "identical"
	case behind == 0:
		return "ahead"
	case ahead == 0:
		return "behind"
	}
	return "diverged"
}

// resolveCommit takes a branch name or a commit SHA.
func resolveCommit(repo *repository, ref string) (plumbing.Hash, bool) {
	if h, ok := repo.branches[ref]; ok {
		return h, true
	}
	if plumbing.IsHash(ref) && repo.Has(plumbing.CommitObject, plumbing.NewHash(ref)) {
		return plumbing.NewHash(ref), true
	}
	return plumbing.ZeroHash, false
}

// page cuts one page out of items by the per_page (default 30, at most
// 100) and page (from 1) query parameters, as GitHub's pagination does
// (https://docs.github.com/rest/using-the-rest-api/using-pagination-in-the-rest-api).
func page[T any](items []T, r *http.Request) []T {
	perPage, err := strconv.Atoi(r.URL.Query().Get("per_page"))
	if err != nil || perPage <= 0 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	number, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || number <= 0 {
		number = 1
	}
	start := min((number-1)*perPage, len(items))
	return items[start:min(start+perPage, len(items))]
}
