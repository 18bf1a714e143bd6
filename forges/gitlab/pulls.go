package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/configbutler/gitops-reverser/forges"
)

// Merge requests (https://docs.gitlab.com/api/merge_requests/), GitLab's
// pull requests: every method is one request, except OpenPullRequest when
// one is open already (the create is refused with 409, then the list finds
// it: two).
//
// The client implements forges.PullRequester and not forges.BaseMerger.
// GitLab's one server-side way to bring the target's new commits into a
// merge request is "Rebase a merge request" (PUT
// merge_requests/:iid/rebase, https://docs.gitlab.com/api/merge_requests/#rebase-a-merge-request):
// it rewrites the source branch's commits onto the target, a force-push
// in effect, which pull-request mode never makes (a human's commit on the
// head would come back with another id, and the branch's compare-and-swap
// head would be gone); it takes no expected head (only skip_ci), and it
// runs in the background (202, rebase_in_progress). There is no "merge the
// target into the source" endpoint, and the commits API makes commits of
// one parent (no CommitRequest.MergeParent), so on GitLab a target that
// conflicts is left to a human (the GitTarget's PullRequestConflict) and
// the executor's commits go on to the source branch, with the guards
// Commit documents (the head check and last_commit_id per file).

var (
	_ forges.PullRequester = (*Client)(nil)
	_ forges.FileLinker    = (*Client)(nil)
)

// FindPullRequest lists the opened merge requests with source_branch head
// and target_branch base (GET merge_requests?state=opened&source_branch=
// &target_branch=): one request. GitLab allows one open merge request per
// source and target, so the first is the one.
func (c *Client) FindPullRequest(ctx context.Context, head, base string) (forges.PullRequest, error) {
	op := fmt.Sprintf("find the open merge request from %s into %s", head, base)
	found, resp, err := c.api.MergeRequests.ListProjectMergeRequests(c.project, &gl.ListProjectMergeRequestsOptions{
		State: new("opened"), SourceBranch: new(head), TargetBranch: new(base), ListOptions: gl.ListOptions{PerPage: 1},
	}, gl.WithContext(ctx))
	if err != nil {
		return forges.PullRequest{}, classify(op, resp, err)
	}
	if len(found) == 0 {
		return forges.PullRequest{}, forges.Errorf(forges.KindNotFound, op, errors.New("none is open"))
	}
	return pullRequestOf(found[0]), nil
}

// OpenPullRequest is "Create MR" (POST merge_requests). GitLab refuses a
// second open merge request for the same source and target with 409
// "Another open merge request already exists for this source branch: !IID";
// the existing one is then found and returned. A source or target branch
// that does not exist is 422 "... does not exist": ErrNotFound.
func (c *Client) OpenPullRequest(ctx context.Context, opts forges.PullRequestOptions) (forges.PullRequest, bool, error) {
	op := fmt.Sprintf("open a merge request from %s into %s", opts.Head, opts.Base)
	created, resp, err := c.api.MergeRequests.CreateMergeRequest(c.project, &gl.CreateMergeRequestOptions{
		Title: new(opts.Title), Description: new(opts.Body), SourceBranch: new(opts.Head), TargetBranch: new(opts.Base),
	}, gl.WithContext(ctx))
	switch {
	case err == nil:
		return pullRequestOf(&created.BasicMergeRequest), true, nil
	case gl.HasStatusCode(err, http.StatusConflict):
		existing, err := c.FindPullRequest(ctx, opts.Head, opts.Base)
		return existing, false, err
	case gl.HasStatusCode(err, http.StatusUnprocessableEntity) && strings.Contains(err.Error(), "does not exist"):
		return forges.PullRequest{}, false, forges.Errorf(forges.KindNotFound, op, err)
	}
	return forges.PullRequest{}, false, classify(op, resp, err)
}

// PullRequest is "Get single MR" (GET merge_requests/:iid): one request.
func (c *Client) PullRequest(ctx context.Context, number int64) (forges.PullRequest, error) {
	mr, resp, err := c.api.MergeRequests.GetMergeRequest(c.project, number, nil, gl.WithContext(ctx))
	if err != nil {
		return forges.PullRequest{}, classify("read merge request !"+strconv.FormatInt(number, 10), resp, err)
	}
	return pullRequestOf(&mr.BasicMergeRequest), nil
}

// EditPullRequest is "Update MR" (PUT merge_requests/:iid) with the title
// and description: one request.
func (c *Client) EditPullRequest(ctx context.Context, number int64, opts forges.PullRequestOptions) (forges.PullRequest, error) {
	mr, resp, err := c.api.MergeRequests.UpdateMergeRequest(c.project, number, &gl.UpdateMergeRequestOptions{
		Title: new(opts.Title), Description: new(opts.Body),
	}, gl.WithContext(ctx))
	if err != nil {
		return forges.PullRequest{}, classify("edit merge request !"+strconv.FormatInt(number, 10), resp, err)
	}
	return pullRequestOf(&mr.BasicMergeRequest), nil
}

// PullRequestURL is {web}/{project}/-/merge_requests/{iid} (the web_url
// the API returns), or "" when the project was given by id.
func (c *Client) PullRequestURL(number int64) string {
	if c.projectWebURL == "" {
		return ""
	}
	return c.projectWebURL + "/-/merge_requests/" + strconv.FormatInt(number, 10)
}

// FileURL is the file's page on the branch,
// {web}/{project}/-/blob/{branch}/{path}: where GitLab's web UI shows a
// file of a ref (the files API returns no web URL; this is the form its
// repository browser links, as gitlab-org/gitlab#232924 quotes it), each
// segment escaped; "" when the project was given by id, as for
// PullRequestURL.
func (c *Client) FileURL(branch, filePath string) string {
	if c.projectWebURL == "" {
		return ""
	}
	return c.projectWebURL + "/-/blob/" + forges.EscapePathSegments(branch) + "/" + forges.EscapePathSegments(filePath)
}

// pullRequestOf maps a merge request. "locked" is GitLab's state while a
// merge is in progress: not merged yet, so still open.
func pullRequestOf(mr *gl.BasicMergeRequest) forges.PullRequest {
	state := forges.PullRequestOpen
	switch mr.State {
	case "merged":
		state = forges.PullRequestMerged
	case "closed":
		state = forges.PullRequestClosed
	}
	return forges.PullRequest{
		Number: mr.IID, URL: mr.WebURL, State: state, Head: mr.SourceBranch, Base: mr.TargetBranch,
		HeadCommit: mr.SHA, Title: mr.Title, Body: mr.Description, Mergeable: mergeStateOf(mr),
	}
}

// mergeStateOf reads detailed_merge_status ("conflict: There are conflicts
// between the source and target branches"; "checking" and "unchecked"
// while Git has not tested the merge yet; the other values are reasons
// other than conflicts, such as approvals or pipelines) and has_conflicts
// (https://docs.gitlab.com/api/merge_requests/#merge-status). A merge
// request that is not open has nothing to merge: MergeUnknown.
func mergeStateOf(mr *gl.BasicMergeRequest) forges.MergeState {
	switch {
	case mr.State != "opened":
		return forges.MergeUnknown
	case mr.HasConflicts || mr.DetailedMergeStatus == "conflict":
		return forges.MergeConflicting
	}
	switch mr.DetailedMergeStatus {
	case "", "unchecked", "checking", "preparing", "approvals_syncing":
		return forges.MergeUnknown
	}
	return forges.MergeClean
}
