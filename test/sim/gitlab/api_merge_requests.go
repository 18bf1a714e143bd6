package gitlab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Merge requests ("Merge requests API", docMergeRequests): list, create,
// get, update (title, description, state_event), merge. GitLab's refusals
// and their words are those of lib/api/merge_requests.rb
// (handle_merge_request_errors!, check_sha_param!) and of
// MergeRequest#validate_branches in gitlab-org/gitlab, named on each.
const docMergeRequests = "https://docs.gitlab.com/api/merge_requests/"

// mergeRequest is one simulated merge request. While it is opened its sha
// follows the source branch; once merged or closed it keeps the one it had.
type mergeRequest struct {
	iid                 int
	source, target      string
	title, description  string
	state               string // opened, closed, merged
	sha, mergeCommit    plumbing.Hash
	author              string
	createdAt, mergedAt time.Time
	closedAt            time.Time
}

func (mr *mergeRequest) headOf(p *project) plumbing.Hash {
	if h, ok := p.branches[mr.source]; ok && mr.state == "opened" {
		mr.sha = h
	}
	return mr.sha
}

func isoTimeOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Format(gitlabTime)
}

// mergeRequestJSON is the part of the merge request entity the forge
// reads: iid, state ("opened", "closed", "merged"), source_branch,
// target_branch, sha ("Diff head SHA of the merge request"), web_url
// (docMergeRequests, "Get single MR").
func (s *Server) mergeRequestJSON(p *project, mr *mergeRequest) map[string]any {
	out := map[string]any{
		"id": p.id*100_000 + mr.iid, "iid": mr.iid, "project_id": p.id,
		"title": mr.title, "description": mr.description, "state": mr.state,
		"source_branch": mr.source, "target_branch": mr.target,
		"source_project_id": p.id, "target_project_id": p.id,
		"sha": mr.headOf(p).String(), "merge_commit_sha": nil,
		"web_url":    fmt.Sprintf("%s/-/merge_requests/%d", s.webURL(p), mr.iid),
		"author":     map[string]any{"username": mr.author},
		"created_at": isoTimeOrNull(mr.createdAt), "merged_at": isoTimeOrNull(mr.mergedAt), "closed_at": isoTimeOrNull(mr.closedAt),
	}
	if !mr.mergeCommit.IsZero() {
		out["merge_commit_sha"] = mr.mergeCommit.String()
	}
	out["merge_status"], out["detailed_merge_status"], out["has_conflicts"] = mergeStatus(p, mr)
	return out
}

// mergeStatus is the merge request's merge status ("Merge status",
// docMergeRequests#merge-status): detailed_merge_status "conflict" ("There
// are conflicts between the source and target branches"), "mergeable"
// ("The branch can merge cleanly into the target branch") or "not_open";
// has_conflicts ("Indicates if merge request has conflicts and cannot be
// merged"); and the deprecated merge_status ("can_be_merged",
// "cannot_be_merged"). GitLab checks the merge in the background
// ("checking", "unchecked" meanwhile); the simulator checks it before it
// answers, the three-way merge of the source into the target
// (gitobjects.MergeFiles).
func mergeStatus(p *project, mr *mergeRequest) (status, detailed string, conflicts bool) {
	if mr.state != "opened" {
		return "can_be_merged", "not_open", false
	}
	_, paths, err := p.MergeCommits(p.branches[mr.target], mr.headOf(p))
	switch {
	case err != nil:
		return "cannot_be_merged", "broken_status", false
	case len(paths) > 0:
		return "cannot_be_merged", "conflict", true
	}
	return "can_be_merged", "mergeable", false
}

// routeMergeRequests serves /projects/:id/merge_requests[/:iid[/merge]];
// ok is false for any other path.
func (s *Server) routeMergeRequests(w http.ResponseWriter, r *http.Request, p *project, user User, rest []string) bool {
	if len(rest) == 0 || rest[0] != "merge_requests" {
		return false
	}
	switch {
	case len(rest) == 1 && r.Method == http.MethodGet:
		s.listMergeRequests(w, r.URL.Query(), p)
	case len(rest) == 1 && r.Method == http.MethodPost:
		s.createMergeRequest(w, r, p, user)
	case len(rest) == 2 && r.Method == http.MethodGet:
		s.withMergeRequest(w, p, rest[1], func(mr *mergeRequest) { writeJSON(w, http.StatusOK, s.mergeRequestJSON(p, mr)) })
	case len(rest) == 2 && r.Method == http.MethodPut:
		s.withMergeRequest(w, p, rest[1], func(mr *mergeRequest) { s.updateMergeRequest(w, r, p, mr) })
	case len(rest) == 3 && rest[2] == "merge" && r.Method == http.MethodPut:
		s.withMergeRequest(w, p, rest[1], func(mr *mergeRequest) { s.acceptMergeRequest(w, r, p, user, mr) })
	default:
		return false
	}
	return true
}

// withMergeRequest runs fn on merge request :iid, answering 404 "404 Not
// found" when there is none.
func (s *Server) withMergeRequest(w http.ResponseWriter, p *project, iid string, fn func(*mergeRequest)) {
	n, err := strconv.Atoi(iid)
	for _, mr := range p.mergeRequests {
		if err == nil && mr.iid == n {
			fn(mr)
			return
		}
	}
	writeMessage(w, http.StatusNotFound, "404 Not found")
}

// listMergeRequests is "List project merge requests": state ("opened",
// "closed", "locked", "merged"; all when absent), source_branch,
// target_branch; newest first (order_by created_at, sort desc), paged
// (docMergeRequests#list-project-merge-requests).
func (s *Server) listMergeRequests(w http.ResponseWriter, q url.Values, p *project) {
	out := []map[string]any{}
	for _, mr := range slices.Backward(p.mergeRequests) {
		switch {
		case q.Has("state") && q.Get("state") != "all" && q.Get("state") != mr.state,
			q.Has("source_branch") && q.Get("source_branch") != mr.source,
			q.Has("target_branch") && q.Get("target_branch") != mr.target:
			continue
		}
		out = append(out, s.mergeRequestJSON(p, mr))
	}
	page, _ := strconv.Atoi(q.Get("page"))
	size := perPage(q)
	start := min(max(page-1, 0)*size, len(out))
	writeJSON(w, http.StatusOK, out[start:min(start+size, len(out))])
}

// createMergeRequest is "Create MR": title, source_branch and
// target_branch are required (400 "title is missing" and the like);
// 201 with the merge request. A branch that does not exist is 422 (the
// errors[:base] that MergeRequests::BuildService adds, "Source branch
// \"x\" does not exist"); a second open merge request for the same source
// and target is 409 with {"message": ["Another open merge request already
// exists for this source branch: !IID"]} (MergeRequest#validate_branches,
// answered by conflict! in handle_merge_request_errors!)
// (docMergeRequests#create-mr).
func (s *Server) createMergeRequest(w http.ResponseWriter, r *http.Request, p *project, user User) {
	var body struct {
		Title        string `json:"title"`
		Description  string `json:"description"`
		SourceBranch string `json:"source_branch"`
		TargetBranch string `json:"target_branch"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Invalid json", "error": "Invalid json"})
		return
	}
	for field, value := range map[string]string{"title": body.Title, "source_branch": body.SourceBranch, "target_branch": body.TargetBranch} {
		if value == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": field + " is missing"})
			return
		}
	}
	head, sourceExists := p.branches[body.SourceBranch]
	_, targetExists := p.branches[body.TargetBranch]
	switch {
	case !sourceExists:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": []string{fmt.Sprintf("Source branch %q does not exist", body.SourceBranch)}})
		return
	case !targetExists:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": []string{fmt.Sprintf("Target branch %q does not exist", body.TargetBranch)}})
		return
	}
	for _, mr := range p.mergeRequests {
		if mr.state == "opened" && mr.source == body.SourceBranch && mr.target == body.TargetBranch {
			writeJSON(w, http.StatusConflict, map[string]any{"message": []string{
				fmt.Sprintf("Another open merge request already exists for this source branch: !%d", mr.iid)}})
			return
		}
	}
	mr := &mergeRequest{iid: len(p.mergeRequests) + 1, source: body.SourceBranch, target: body.TargetBranch,
		title: body.Title, description: body.Description, state: "opened", sha: head, author: user.Username, createdAt: s.now()}
	p.mergeRequests = append(p.mergeRequests, mr)
	writeJSON(w, http.StatusCreated, s.mergeRequestJSON(p, mr))
}

// updateMergeRequest is "Update MR": title, description, state_event
// ("close", "reopen"); a merged merge request stays merged
// (docMergeRequests#update-mr).
func (s *Server) updateMergeRequest(w http.ResponseWriter, r *http.Request, p *project, mr *mergeRequest) {
	var body struct {
		Title       *string `json:"title"`
		Description *string `json:"description"`
		StateEvent  string  `json:"state_event"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Invalid json", "error": "Invalid json"})
		return
	}
	if body.Title != nil {
		mr.title = *body.Title
	}
	if body.Description != nil {
		mr.description = *body.Description
	}
	switch {
	case body.StateEvent == "close" && mr.state == "opened":
		mr.headOf(p)
		mr.state, mr.closedAt = "closed", s.now()
	case body.StateEvent == "reopen" && mr.state == "closed":
		mr.state, mr.closedAt = "opened", time.Time{}
	}
	writeJSON(w, http.StatusOK, s.mergeRequestJSON(p, mr))
}

// acceptMergeRequest is "Merge a merge request": 405 when it is not open
// (not_allowed!), 406 "Branch cannot be merged" when it has conflicts,
// 409 "SHA does not match HEAD of source branch: SHA" when sha is given
// and the source moved (check_sha_param!); 200 with the merged merge
// request (docMergeRequests#merge-a-merge-request). The simulator merges
// with the "merge commit" method, GitLab's default.
func (s *Server) acceptMergeRequest(w http.ResponseWriter, r *http.Request, p *project, user User, mr *mergeRequest) {
	var body struct {
		SHA string `json:"sha"`
	}
	if r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Invalid json", "error": "Invalid json"})
			return
		}
	}
	if mr.state != "opened" {
		writeMessage(w, http.StatusMethodNotAllowed, "405 Method Not Allowed")
		return
	}
	head, target := mr.headOf(p), p.branches[mr.target]
	if body.SHA != "" && body.SHA != head.String() {
		writeMessage(w, http.StatusConflict, "SHA does not match HEAD of source branch: "+head.String())
		return
	}
	tree, conflicts, err := p.MergeCommits(target, head)
	switch {
	case err != nil:
		writeMessage(w, http.StatusInternalServerError, err.Error())
		return
	case len(conflicts) > 0:
		writeMessage(w, http.StatusNotAcceptable, "Branch cannot be merged")
		return
	}
	message := fmt.Sprintf("Merge branch '%s' into '%s'\n\n%s\n\nSee merge request %s!%d\n", mr.source, mr.target, mr.title, p.path, mr.iid)
	who := signature{name: user.Name, email: user.Email}
	merged, err := p.writeCommit(tree, []plumbing.Hash{target, head}, message, who, who, s.now())
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, err.Error())
		return
	}
	p.branches[mr.target] = merged
	mr.state, mr.mergeCommit, mr.mergedAt = "merged", merged, s.now()
	writeJSON(w, http.StatusOK, s.mergeRequestJSON(p, mr))
}
