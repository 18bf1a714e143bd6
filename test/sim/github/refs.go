package github

import (
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Git references (docRefs). Only branches (refs/heads/*) are simulated.

func (s *Server) refResponse(repo *repository, branch string) refJSON {
	var out refJSON
	out.Ref = "refs/heads/" + branch
	out.NodeID = "REF_" + branch
	out.URL = s.apiURL(repo, "/git/refs/heads/%s", branch)
	out.Object.Type = "commit"
	out.Object.SHA = repo.branches[branch].String()
	out.Object.URL = s.apiURL(repo, "/git/commits/%s", out.Object.SHA)
	return out
}

// getRef is "Get a reference": GET /repos/{o}/{r}/git/ref/heads/{branch}.
// A missing branch is 404; an empty repository 409 (docGitDatabase).
func (s *Server) getRef(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return
	}
	if repo.empty() {
		emptyRepository(w, docRefs+"#get-a-reference")
		return
	}
	branch, isBranch := strings.CutPrefix(r.PathValue("ref"), "heads/")
	if _, exists := repo.branches[branch]; !isBranch || !exists {
		notFound(w, docRefs+"#get-a-reference")
		return
	}
	writeJSON(w, http.StatusOK, s.refResponse(repo, branch))
}

// createRef is "Create a reference": POST /repos/{o}/{r}/git/refs with the
// fully qualified ref ("If it doesn't start with 'refs' and have at least
// two slashes, it will be rejected", docRefs) and a commit sha. An existing
// ref is 422 "Reference already exists".
func (s *Server) createRef(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return
	}
	var body struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	const doc = docRefs + "#create-a-reference"
	if repo.empty() {
		emptyRepository(w, doc)
		return
	}
	if !strings.HasPrefix(body.Ref, "refs/") || strings.Count(body.Ref, "/") < 2 {
		validationFailed(w, "Reference name must start with 'refs/' and have at least two slashes.", doc)
		return
	}
	branch, isBranch := strings.CutPrefix(body.Ref, "refs/heads/")
	if !isBranch {
		validationFailed(w, "The simulator only creates branches (refs/heads/...).", doc)
		return
	}
	if !plumbing.IsHash(body.SHA) || !repo.Has(plumbing.CommitObject, plumbing.NewHash(body.SHA)) {
		validationFailed(w, "Object does not exist", doc)
		return
	}
	if _, exists := repo.branches[branch]; exists {
		validationFailed(w, "Reference already exists", doc)
		return
	}
	repo.branches[branch] = plumbing.NewHash(body.SHA)
	writeJSON(w, http.StatusCreated, s.refResponse(repo, branch))
}

// updateRef is "Update a reference": PATCH /repos/{o}/{r}/git/refs/heads/B
// with sha and force. "Leaving this out or setting it to false will make
// sure you're not overwriting work" (docRefs): without force, a sha that
// does not descend from the current head is 422 "Update is not a fast
// forward".
func (s *Server) updateRef(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return
	}
	var body struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	const doc = docRefs + "#update-a-reference"
	if repo.empty() {
		emptyRepository(w, doc)
		return
	}
	branch, isBranch := strings.CutPrefix(r.PathValue("ref"), "heads/")
	current, exists := repo.branches[branch]
	if !isBranch || !exists {
		validationFailed(w, "Reference does not exist", doc)
		return
	}
	if !plumbing.IsHash(body.SHA) || !repo.Has(plumbing.CommitObject, plumbing.NewHash(body.SHA)) {
		validationFailed(w, "Object does not exist", doc)
		return
	}
	next := plumbing.NewHash(body.SHA)
	if !body.Force && !repo.IsAncestor(current, next) {
		validationFailed(w, "Update is not a fast forward", doc)
		return
	}
	repo.branches[branch] = next
	writeJSON(w, http.StatusOK, s.refResponse(repo, branch))
}
