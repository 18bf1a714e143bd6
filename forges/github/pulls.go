package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
)

// Pull requests ("REST API endpoints for pull requests",
// https://docs.github.com/rest/pulls/pulls). Every method is one request,
// except OpenPullRequest when one is open already (the create is refused,
// then the list finds it: two). The content-creating ones (create, update,
// update-branch) are paced like a commit's requests, so GitHub's secondary
// limit never refuses them half-way through an update.
//
// An update of an open pull request in pull-request mode costs the 3
// requests of the commit to its head plus at most 1 here (EditPullRequest,
// when the body says what changed); finding it costs nothing while the
// executor remembers its number.

var (
	_ forges.PullRequester = (*Client)(nil)
	_ forges.BaseMerger    = (*Client)(nil)
	_ forges.FileLinker    = (*Client)(nil)
)

// FindPullRequest lists the open pull requests with head
// "{owner}:{head}" and base (GET pulls?state=open&head=...&base=...,
// https://docs.github.com/rest/pulls/pulls#list-pull-requests): one
// request. GitHub allows one open pull request per head and base, so the
// first is the one.
func (c *Client) FindPullRequest(ctx context.Context, head, base string) (forges.PullRequest, error) {
	op := fmt.Sprintf("find the open pull request from %s into %s", head, base)
	pulls, _, err := c.api.PullRequests.List(ctx, c.owner, c.repo, &github.PullRequestListOptions{
		State: "open", Head: c.owner + ":" + head, Base: base, ListOptions: github.ListOptions{PerPage: 1},
	})
	if err != nil {
		return forges.PullRequest{}, c.classify(op, err)
	}
	if len(pulls) == 0 {
		return forges.PullRequest{}, forges.Errorf(forges.KindNotFound, op, errors.New("none is open"))
	}
	return pullRequestOf(pulls[0]), nil
}

// OpenPullRequest is "Create a pull request" (POST pulls). GitHub refuses
// a second open pull request for the same head and base with 422 "A pull
// request already exists for OWNER:HEAD."; the existing one is then found
// and returned. A head or base that is no branch is 422 on field "head" or
// "base" (code "invalid"): ErrNotFound.
func (c *Client) OpenPullRequest(ctx context.Context, opts forges.PullRequestOptions) (forges.PullRequest, bool, error) {
	op := fmt.Sprintf("open a pull request from %s into %s", opts.Head, opts.Base)
	if err := c.pace(op, 1); err != nil {
		return forges.PullRequest{}, false, err
	}
	created, _, err := c.api.PullRequests.Create(ctx, c.owner, c.repo, github.CreatePullRequest{
		Title: new(opts.Title), Head: opts.Head, Base: opts.Base, Body: new(opts.Body),
	})
	switch refusal := createRefusal(err); refusal {
	case "":
	case "exists":
		existing, err := c.FindPullRequest(ctx, opts.Head, opts.Base)
		return existing, false, err
	case "branch":
		return forges.PullRequest{}, false, forges.Errorf(forges.KindNotFound, op, err)
	default:
		return forges.PullRequest{}, false, c.classify(op, err)
	}
	return pullRequestOf(created), true, nil
}

// createRefusal reads a refused create: "exists" for an open pull request
// of the same head and base, "branch" for a head or base that is no
// branch, "" for no error, "other" otherwise.
func createRefusal(err error) string {
	if err == nil {
		return ""
	}
	var refused *github.ErrorResponse
	if !errors.As(err, &refused) || refused.Response == nil || refused.Response.StatusCode != http.StatusUnprocessableEntity {
		return "other"
	}
	for _, detail := range refused.Errors {
		switch {
		case strings.Contains(detail.Message, "already exists"):
			return "exists"
		case detail.Code == "invalid" && (detail.Field == "head" || detail.Field == "base"):
			return "branch"
		}
	}
	return "other"
}

// PullRequest is "Get a pull request" (GET pulls/{n}): one request.
func (c *Client) PullRequest(ctx context.Context, number int64) (forges.PullRequest, error) {
	pull, _, err := c.api.PullRequests.Get(ctx, c.owner, c.repo, int(number))
	if err != nil {
		return forges.PullRequest{}, c.classify(fmt.Sprintf("read pull request #%d", number), err)
	}
	return pullRequestOf(pull), nil
}

// EditPullRequest is "Update a pull request" (PATCH pulls/{n}) with the
// title and body: one request.
func (c *Client) EditPullRequest(ctx context.Context, number int64, opts forges.PullRequestOptions) (forges.PullRequest, error) {
	op := fmt.Sprintf("edit pull request #%d", number)
	if err := c.pace(op, 1); err != nil {
		return forges.PullRequest{}, err
	}
	pull, _, err := c.api.PullRequests.Edit(ctx, c.owner, c.repo, int(number),
		&github.PullRequest{Title: new(opts.Title), Body: new(opts.Body)})
	if err != nil {
		return forges.PullRequest{}, c.classify(op, err)
	}
	return pullRequestOf(pull), nil
}

// PullRequestURL is https://github.com/{owner}/{repo}/pull/{n} on the
// configured web host.
func (c *Client) PullRequestURL(number int64) string {
	return fmt.Sprintf("%s/%s/%s/pull/%d", c.webURL, c.owner, c.repo, number)
}

// FileURL is the file's page on the branch,
// {web}/{owner}/{repo}/blob/{branch}/{path}: the URL GitHub's web UI
// serves a file of a branch at (the html_url "Get repository content"
// returns, https://docs.github.com/rest/repos/contents#get-repository-content,
// has this form). Each segment of the branch and the path is escaped.
func (c *Client) FileURL(branch, filePath string) string {
	return fmt.Sprintf("%s/%s/%s/blob/%s/%s", c.webURL, c.owner, c.repo,
		forges.EscapePathSegments(branch), forges.EscapePathSegments(filePath))
}

// MergeBaseIntoHead is "Update a pull request branch" (PUT
// pulls/{n}/update-branch) with expected_head_sha: "If the expected SHA
// does not match the pull request's HEAD, you will receive a 422"
// (https://docs.github.com/rest/pulls/pulls#update-a-pull-request-branch).
// One request. GitHub answers 202 and merges in the background, so the new
// head is not known yet. Its other 422s are told apart by GitHub's words:
// "merge conflict between base and head" (ErrMergeConflict), "There are no
// new commits on the base branch." (nothing to do: nil); any other 422
// (a closed pull request) is ErrConflict: read it again.
func (c *Client) MergeBaseIntoHead(ctx context.Context, number int64, expectedHead string) error {
	op := fmt.Sprintf("merge the base into the head of pull request #%d", number)
	if err := c.pace(op, 1); err != nil {
		return err
	}
	_, _, err := c.api.PullRequests.UpdateBranch(ctx, c.owner, c.repo, int(number),
		github.UpdatePullRequestBranchRequest{ExpectedHeadSHA: new(expectedHead)})
	var accepted *github.AcceptedError
	if err == nil || errors.As(err, &accepted) {
		return nil
	}
	resp, message := responseOf(err)
	if resp == nil || resp.StatusCode != http.StatusUnprocessableEntity {
		return c.classify(op, err)
	}
	switch message = strings.ToLower(message); {
	case strings.Contains(message, "no new commits"):
		return nil
	case strings.Contains(message, "merge conflict"):
		return forges.Errorf(forges.KindMergeConflict, op, err)
	}
	return forges.Errorf(forges.KindConflict, op, err)
}

// pullRequestOf maps go-github's pull request. The list endpoint leaves
// "merged" out; merged_at says it there. mergeable is true, false, or null
// while GitHub computes it: "If the value is null, then GitHub has started
// a background job to compute the mergeability. After giving the job time
// to complete, resubmit the request" ("Get a pull request",
// https://docs.github.com/rest/pulls/pulls#get-a-pull-request); the list
// leaves it out (MergeUnknown).
func pullRequestOf(pull *github.PullRequest) forges.PullRequest {
	state := forges.PullRequestClosed
	switch {
	case pull.GetState() == "open":
		state = forges.PullRequestOpen
	case pull.GetMerged() || pull.MergedAt != nil:
		state = forges.PullRequestMerged
	}
	return forges.PullRequest{
		Number: int64(pull.GetNumber()), URL: pull.GetHTMLURL(), State: state,
		Head: pull.GetHead().GetRef(), Base: pull.GetBase().GetRef(), HeadCommit: pull.GetHead().GetSHA(),
		Title: pull.GetTitle(), Body: pull.GetBody(), Mergeable: mergeStateOf(pull.Mergeable),
	}
}

// mergeStateOf reads GitHub's mergeable: true clean, false conflicting,
// null (or absent) unknown.
func mergeStateOf(mergeable *bool) forges.MergeState {
	switch {
	case mergeable == nil:
		return forges.MergeUnknown
	case *mergeable:
		return forges.MergeClean
	}
	return forges.MergeConflicting
}
