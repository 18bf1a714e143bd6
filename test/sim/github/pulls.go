package github

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Pull requests ("REST API endpoints for pull requests", docPulls): list,
// create, get, update, update the branch, merge. Each handler cites the
// section it follows. Where the page names a status but not GitHub's words,
// the message is the one GitHub is known to send, as quoted in client
// issue trackers (named on each).
const (
	docPulls = "https://docs.github.com/rest/pulls/pulls"
	// docValidation: "422 Unprocessable Entity ... Validation Failed", with
	// an errors array of resource, field and code ("missing_field",
	// "invalid", "already_exists", "custom" with a message)
	// (https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api).
	docValidation = "https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api"
)

// pullRequest is one simulated pull request. While it is open its head
// follows the head branch; once merged or closed it keeps the head it had.
type pullRequest struct {
	number      int64
	head, base  string
	title, body string
	open        bool
	merged      bool
	mergedAt    time.Time
	closedAt    time.Time
	createdAt   time.Time
	mergeCommit plumbing.Hash
	headSHA     plumbing.Hash
	author      string
	// mergeability is the last computed mergeability and the heads it
	// was computed for (mergeability.go).
	mergeability mergeability
}

// headOf is the commit the pull request's head is at: the branch while it
// is open and the branch exists, the last one seen otherwise.
func (pr *pullRequest) headOf(repo *repository) plumbing.Hash {
	if h, ok := repo.branches[pr.head]; ok && pr.open {
		pr.headSHA = h
	}
	return pr.headSHA
}

type branchRefJSON struct {
	Label string `json:"label"`
	Ref   string `json:"ref"`
	SHA   string `json:"sha"`
}

type pullJSON struct {
	ID             int64         `json:"id"`
	NodeID         string        `json:"node_id"`
	Number         int64         `json:"number"`
	URL            string        `json:"url"`
	HTMLURL        string        `json:"html_url"`
	State          string        `json:"state"`
	Title          string        `json:"title"`
	Body           string        `json:"body"`
	User           ownerJSON     `json:"user"`
	Draft          bool          `json:"draft"`
	Merged         bool          `json:"merged"`
	MergedAt       *string       `json:"merged_at"`
	ClosedAt       *string       `json:"closed_at"`
	CreatedAt      string        `json:"created_at"`
	MergeCommitSHA *string       `json:"merge_commit_sha"`
	Head           branchRefJSON `json:"head"`
	Base           branchRefJSON `json:"base"`
	// Mergeable and MergeableState are in the full pull request only
	// (mergeability.go); the list leaves them out.
	Mergeable      *bool  `json:"mergeable,omitempty"`
	MergeableState string `json:"mergeable_state,omitempty"`
}

// validationError is GitHub's 422 with one entry in its errors array.
type validationError struct {
	Resource string `json:"resource"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func validationFailedWith(w http.ResponseWriter, doc string, detail validationError) {
	writeJSON(w, http.StatusUnprocessableEntity, struct {
		Message          string            `json:"message"`
		Errors           []validationError `json:"errors"`
		DocumentationURL string            `json:"documentation_url"`
	}{"Validation Failed", []validationError{detail}, doc})
}

func timestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	formatted := t.UTC().Format(time.RFC3339)
	return &formatted
}

func (s *Server) pullResponse(repo *repository, pr *pullRequest) pullJSON {
	out := pullJSON{
		ID: repo.id*1_000_000 + pr.number, NodeID: "PR_" + strconv.FormatInt(pr.number, 10), Number: pr.number,
		URL: s.apiURL(repo, "/pulls/%d", pr.number), HTMLURL: s.htmlURL(repo, "/pull/%d", pr.number),
		State: "closed", Title: pr.title, Body: pr.body, User: ownerJSON{Login: pr.author, Type: "User"},
		Merged: pr.merged, MergedAt: timestamp(pr.mergedAt), ClosedAt: timestamp(pr.closedAt),
		CreatedAt: pr.createdAt.UTC().Format(time.RFC3339),
		Head:      branchRefJSON{Label: repo.owner + ":" + pr.head, Ref: pr.head, SHA: pr.headOf(repo).String()},
		Base:      branchRefJSON{Label: repo.owner + ":" + pr.base, Ref: pr.base, SHA: repo.branches[pr.base].String()},
	}
	if pr.open {
		out.State = "open"
	}
	if !pr.mergeCommit.IsZero() {
		out.MergeCommitSHA = new(pr.mergeCommit.String())
	}
	return out
}

// lookupPull finds pull request {pull_number} of the request's repository,
// answering 404 when there is none.
func (s *Server) lookupPull(w http.ResponseWriter, r *http.Request, doc string) (*repository, *pullRequest, bool) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return nil, nil, false
	}
	number, err := strconv.ParseInt(r.PathValue("number"), 10, 64)
	if err == nil {
		for _, pr := range repo.pulls {
			if pr.number == number {
				return repo, pr, true
			}
		}
	}
	notFound(w, doc)
	return nil, nil, false
}

// pullAndBody finds the pull request of the request path and decodes the
// request's JSON body, when it has one, into body.
func (s *Server) pullAndBody(w http.ResponseWriter, r *http.Request, doc string, body any) (*repository, *pullRequest, bool) {
	repo, pr, ok := s.lookupPull(w, r, doc)
	if !ok || (r.ContentLength != 0 && !decodeBody(w, r, body)) {
		return nil, nil, false
	}
	return repo, pr, true
}

// headBranch reads "head" as the list and create endpoints take it:
// "user:ref-name" or "organization:ref-name", or (create, same repository)
// the branch alone. Forks are not simulated: another owner names no branch.
func headBranch(repo *repository, head string) (string, bool) {
	owner, branch, qualified := strings.Cut(head, ":")
	if !qualified {
		return head, true
	}
	return branch, strings.EqualFold(owner, repo.owner)
}

// listPulls is "List pull requests": state "open" (the default), "closed"
// or "all"; head "Filter pulls by head user or head organization and
// branch name in the format of user:ref-name"; base "Filter pulls by base
// branch name"; newest first by default (sort "created", direction "desc"),
// paged (docPulls#list-pull-requests).
func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return
	}
	query := r.URL.Query()
	state := query.Get("state")
	if state == "" {
		state = "open"
	}
	head, headOK := "", true
	if query.Has("head") {
		head, headOK = headBranch(repo, query.Get("head"))
	}
	// "pull-request-simple": no mergeable (mergeability.go).
	out := []pullJSON{}
	for _, pr := range slices.Backward(repo.pulls) {
		if !headOK || (head != "" && pr.head != head) || (query.Has("base") && pr.base != query.Get("base")) {
			continue
		}
		if state == "all" || (state == "open") == pr.open {
			out = append(out, s.pullResponse(repo, pr))
		}
	}
	writeJSON(w, http.StatusOK, page(out, r))
}

// createPull is "Create a pull request": title, head, base, body. 201 with
// the pull request. Refused with 422 Validation Failed: a head or base that
// is no branch (field "head"/"base", code "invalid"), a head with no
// commits the base lacks ("No commits between BASE and HEAD"), and a pull
// request already open for the same head and base ("A pull request already
// exists for OWNER:HEAD.", quoted in github/VisualStudio#453 and
// vsoch/pull-request-action#86) (docPulls#create-a-pull-request).
func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	const doc = docPulls + "#create-a-pull-request"
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return
	}
	var body struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	head, headOK := headBranch(repo, body.Head)
	headCommit, headExists := repo.branches[head]
	baseCommit, baseExists := repo.branches[body.Base]
	switch {
	case body.Title == "":
		validationFailedWith(w, doc, validationError{Resource: "PullRequest", Field: "title", Code: "missing_field"})
		return
	case !headOK || !headExists:
		validationFailedWith(w, doc, validationError{Resource: "PullRequest", Field: "head", Code: "invalid"})
		return
	case !baseExists:
		validationFailedWith(w, doc, validationError{Resource: "PullRequest", Field: "base", Code: "invalid"})
		return
	}
	for _, pr := range repo.pulls {
		if pr.open && pr.head == head && pr.base == body.Base {
			validationFailedWith(w, doc, validationError{Resource: "PullRequest", Code: "custom",
				Message: "A pull request already exists for " + repo.owner + ":" + head + "."})
			return
		}
	}
	if repo.IsAncestor(headCommit, baseCommit) {
		validationFailedWith(w, doc, validationError{Resource: "PullRequest", Code: "custom",
			Message: "No commits between " + body.Base + " and " + head})
		return
	}
	repo.nextPull++
	pr := &pullRequest{number: repo.nextPull, head: head, base: body.Base, title: body.Title, body: body.Body,
		open: true, createdAt: s.config.now(), headSHA: headCommit, author: requestCredential(r).identity.Name}
	repo.pulls = append(repo.pulls, pr)
	writeJSON(w, http.StatusCreated, s.fullPullResponse(repo, pr))
}

// getPull is "Get a pull request": 200, or 404 (docPulls#get-a-pull-request).
func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	repo, pr, ok := s.lookupPull(w, r, docPulls+"#get-a-pull-request")
	if ok {
		writeJSON(w, http.StatusOK, s.fullPullResponse(repo, pr))
	}
}

// updatePull is "Update a pull request": title, body, and state "open" or
// "closed" (docPulls#update-a-pull-request). A merged pull request stays
// closed.
func (s *Server) updatePull(w http.ResponseWriter, r *http.Request) {
	const doc = docPulls + "#update-a-pull-request"
	var body struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
	}
	repo, pr, ok := s.pullAndBody(w, r, doc, &body)
	if !ok {
		return
	}
	if body.Title != nil {
		pr.title = *body.Title
	}
	if body.Body != nil {
		pr.body = *body.Body
	}
	if body.State != nil && !pr.merged {
		switch *body.State {
		case "closed":
			pr.headOf(repo)
			pr.open, pr.closedAt = false, s.config.now()
		case "open":
			pr.open, pr.closedAt = true, time.Time{}
		default:
			validationFailedWith(w, doc, validationError{Resource: "PullRequest", Field: "state", Code: "invalid"})
			return
		}
	}
	writeJSON(w, http.StatusOK, s.fullPullResponse(repo, pr))
}

// updatePullBranch is "Update a pull request branch": "Updates the pull
// request branch with the latest upstream changes by merging HEAD from the
// base branch into the pull request branch"; expected_head_sha: "If the
// expected SHA does not match the pull request's HEAD, you will receive a
// 422 Unprocessable Entity status"; 202 {"message": "Updating pull request
// branch.", "url": ...} (docPulls#update-a-pull-request-branch). GitHub
// merges in the background; the simulator merges before it answers, one of
// the schedules the 202 allows. The other 422s are GitHub's words as
// clients quote them ("merge conflict between base and head", "There are
// no new commits on the base branch."; cli/cli's update-branch and the
// GitHub Actions that call it).
func (s *Server) updatePullBranch(w http.ResponseWriter, r *http.Request) {
	const doc = docPulls + "#update-a-pull-request-branch"
	var body struct {
		ExpectedHeadSHA string `json:"expected_head_sha"`
	}
	repo, pr, ok := s.pullAndBody(w, r, doc, &body)
	if !ok {
		return
	}
	head, base := pr.headOf(repo), repo.branches[pr.base]
	switch {
	case !pr.open:
		validationFailed(w, "Pull request is closed", doc)
		return
	case body.ExpectedHeadSHA != "" && body.ExpectedHeadSHA != head.String():
		validationFailed(w, "expected head sha didn't match current head ref.", doc)
		return
	case repo.IsAncestor(base, head):
		validationFailed(w, "There are no new commits on the base branch.", doc)
		return
	}
	message := "Merge branch '" + pr.base + "' into " + pr.head
	merged, conflict, err := s.mergeCommit(repo, r, head, base, message)
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	case conflict:
		validationFailed(w, "merge conflict between base and head", doc)
		return
	}
	repo.branches[pr.head] = merged
	writeJSON(w, http.StatusAccepted, map[string]string{
		"message": "Updating pull request branch.", "url": s.htmlURL(repo, "/pull/%d", pr.number)})
}

// mergePull is "Merge a pull request": sha "SHA that pull request head
// must match to allow merge"; 200 {"sha", "merged": true, "message"}; 405
// "Method Not Allowed if merge cannot be performed"; 409 "Conflict if sha
// was provided and pull request head did not match"
// (docPulls#merge-a-pull-request). Only merge_method "merge" (the
// default) is simulated: a merge commit of head into base.
func (s *Server) mergePull(w http.ResponseWriter, r *http.Request) {
	const doc = docPulls + "#merge-a-pull-request"
	var body struct {
		CommitTitle string `json:"commit_title"`
		SHA         string `json:"sha"`
		MergeMethod string `json:"merge_method"`
	}
	repo, pr, ok := s.pullAndBody(w, r, doc, &body)
	if !ok {
		return
	}
	head, base := pr.headOf(repo), repo.branches[pr.base]
	switch {
	case body.MergeMethod != "" && body.MergeMethod != "merge":
		validationFailed(w, "the simulator merges with merge_method merge only", doc)
		return
	case !pr.open:
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable", doc)
		return
	case body.SHA != "" && body.SHA != head.String():
		writeError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.", doc)
		return
	}
	title := body.CommitTitle
	if title == "" {
		title = "Merge pull request #" + strconv.FormatInt(pr.number, 10) + " from " + repo.owner + "/" + pr.head
	}
	merged, conflict, err := s.mergeCommit(repo, r, base, head, title)
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	case conflict:
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable", doc)
		return
	}
	repo.branches[pr.base] = merged
	pr.open, pr.merged, pr.mergeCommit = false, true, merged
	pr.mergedAt, pr.closedAt = s.config.now(), s.config.now()
	writeJSON(w, http.StatusOK, map[string]any{"sha": merged.String(), "merged": true, "message": "Pull Request successfully merged"})
}

// mergeCommit writes a merge commit of theirs into ours (parents ours,
// theirs) by the request's user, unless the two conflict.
func (s *Server) mergeCommit(repo *repository, r *http.Request, ours, theirs plumbing.Hash, message string) (plumbing.Hash, bool, error) {
	tree, conflicts, err := repo.MergeCommits(ours, theirs)
	if err != nil || len(conflicts) > 0 {
		return plumbing.ZeroHash, len(conflicts) > 0, err
	}
	who := requestCredential(r).identity
	who.When = s.config.now()
	h, err := repo.WriteCommit(&object.Commit{Author: who, Committer: who, Message: message,
		TreeHash: tree, ParentHashes: []plumbing.Hash{ours, theirs}})
	return h, false, err
}
