package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/configbutler/gitops-reverser/forges"
)

// Pull requests through Gitea's API (1.27, routers/api/v1/repo/pull.go):
//
//   - find: GET pulls/{base}/{head} answers the pull request of that pair
//     in ANY state, the first one Gitea stored; when it is open that is the
//     answer (one request), when none exists 404 (one request). When it is
//     merged or closed, an open one may have come after it, so the open
//     pull requests into base are listed (GET pulls?state=open&base_branch=)
//     and the one from head is taken: two requests. A base with a slash
//     cannot be named in that route ({base} is one path segment), so it is
//     listed directly.
//   - open: POST pulls; Gitea refuses a second open pull request for the
//     pair with 409 "pull request already exists for these targets", and
//     the existing one is found and returned. A head or base that is no
//     branch is 404 (ErrNotFound).
//   - read: GET pulls/{index}; edit: PATCH pulls/{index}.
//   - merge the base into the head: POST pulls/{index}/update (style merge,
//     the default: "Merge PR's baseBranch into headBranch"). Gitea takes no
//     expected head there, so the client reads the pull request first and
//     refuses a head other than the expected one (ErrConflict) without
//     writing. Gitea's merge then runs on the head it reads itself: a push
//     that lands in the moment between the two requests is merged with the
//     base, not lost, but the caller's expected head is then stale, and its
//     next commit's compare-and-swap says so. Gitea answers 409 "merge
//     failed because of conflict" (ErrMergeConflict), 422 for a merged or
//     closed pull request (ErrConflict), and 500 when the head has every
//     commit of the base already ("is up to date", a message production
//     servers hide from non-admins): the client then compares the branches
//     and answers nil when the head is not behind.
//
// Gitea meters no requests, so nothing is paced.

var (
	_ forges.PullRequester = (*Client)(nil)
	_ forges.BaseMerger    = (*Client)(nil)
	_ forges.FileLinker    = (*Client)(nil)
)

// pullResponse is the part of Gitea's PullRequest the client reads.
type pullResponse struct {
	Number  int64  `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"`
	Merged  bool   `json:"merged"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	Head    struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"base"`
	Mergeable bool   `json:"mergeable"`
	MergeBase string `json:"merge_base"`
}

func (p pullResponse) pullRequest() forges.PullRequest {
	state := forges.PullRequestClosed
	switch {
	case p.Merged:
		state = forges.PullRequestMerged
	case p.State == "open":
		state = forges.PullRequestOpen
	}
	return forges.PullRequest{Number: p.Number, URL: p.HTMLURL, State: state, Head: p.Head.Ref, Base: p.Base.Ref,
		HeadCommit: p.Head.SHA, Title: p.Title, Body: p.Body, Mergeable: p.mergeState()}
}

// mergeState reads Gitea's mergeable, which is false not only on a
// conflict but also while Gitea checks the pull request (after every push
// to its head or base), after a failed check, and for a work-in-progress
// title (models/issues.PullRequest.Mergeable: "Being conflict checked. Has
// a conflict. Received a error while being conflict checked. Is a
// work-in-progress pull request."); the API says no more. So false reads
// as conflicting only when the base moved past the merge base Gitea last
// computed (base.sha is the base branch's head, merge_base the merge
// base), which every conflict needs; a base that did not move cannot
// conflict, and false then reads clean. Right after a push to the base
// that does not conflict, while Gitea checks, this reads conflicting for
// that moment: MergeBaseIntoHead then merges the base in, which the
// pull request could take anyway.
func (p pullResponse) mergeState() forges.MergeState {
	switch {
	case p.State != "open" || p.Merged:
		return forges.MergeUnknown
	case p.Mergeable:
		return forges.MergeClean
	case p.MergeBase != "" && p.MergeBase == p.Base.SHA:
		return forges.MergeClean
	case p.MergeBase == "" || p.Base.SHA == "":
		return forges.MergeUnknown
	}
	return forges.MergeConflicting
}

type pullOptions struct {
	Head  string `json:"head,omitempty"`
	Base  string `json:"base,omitempty"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// FindPullRequest returns the open pull request from head into base.
func (c *Client) FindPullRequest(ctx context.Context, head, base string) (forges.PullRequest, error) {
	op := fmt.Sprintf("find the open pull request from %s into %s", head, base)
	if !strings.Contains(base, "/") {
		var found pullResponse
		err := c.call(ctx, http.MethodGet, c.repoPath("/pulls/"+url.PathEscape(base)+"/"+escapeRef(head)), nil, nil, &found)
		switch {
		case err != nil:
			return forges.PullRequest{}, classify(op, err)
		case found.State == "open" && !found.Merged:
			return found.pullRequest(), nil
		}
	}
	return c.listOpenPull(ctx, op, head, base)
}

// listOpenPull pages through the open pull requests into base for the one
// from head.
func (c *Client) listOpenPull(ctx context.Context, op, head, base string) (forges.PullRequest, error) {
	const limit = 50
	for page := 1; ; page++ {
		var pulls []pullResponse
		query := url.Values{"state": {"open"}, "base_branch": {base}, "limit": {strconv.Itoa(limit)}, "page": {strconv.Itoa(page)}}
		if err := c.call(ctx, http.MethodGet, c.repoPath("/pulls"), query, nil, &pulls); err != nil {
			return forges.PullRequest{}, classify(op, err)
		}
		for _, pull := range pulls {
			if pull.Head.Ref == head && pull.Base.Ref == base {
				return pull.pullRequest(), nil
			}
		}
		if len(pulls) < limit {
			return forges.PullRequest{}, forges.Errorf(forges.KindNotFound, op, errors.New("none is open"))
		}
	}
}

// OpenPullRequest opens a pull request, or returns the one open for the
// pair (409).
func (c *Client) OpenPullRequest(ctx context.Context, opts forges.PullRequestOptions) (forges.PullRequest, bool, error) {
	op := fmt.Sprintf("open a pull request from %s into %s", opts.Head, opts.Base)
	var created pullResponse
	err := c.call(ctx, http.MethodPost, c.repoPath("/pulls"), nil,
		pullOptions{Head: opts.Head, Base: opts.Base, Title: opts.Title, Body: opts.Body}, &created)
	switch {
	case err == nil:
		return created.pullRequest(), true, nil
	case statusOf(err) == http.StatusConflict:
		existing, err := c.FindPullRequest(ctx, opts.Head, opts.Base)
		return existing, false, err
	}
	return forges.PullRequest{}, false, classify(op, err)
}

// PullRequest reads pull request number: GET pulls/{index}.
func (c *Client) PullRequest(ctx context.Context, number int64) (forges.PullRequest, error) {
	var pull pullResponse
	if err := c.call(ctx, http.MethodGet, c.pullPath(number, ""), nil, nil, &pull); err != nil {
		return forges.PullRequest{}, classify(fmt.Sprintf("read pull request #%d", number), err)
	}
	return pull.pullRequest(), nil
}

// EditPullRequest sets the title and body: PATCH pulls/{index}.
func (c *Client) EditPullRequest(ctx context.Context, number int64, opts forges.PullRequestOptions) (forges.PullRequest, error) {
	var pull pullResponse
	err := c.call(ctx, http.MethodPatch, c.pullPath(number, ""), nil, pullOptions{Title: opts.Title, Body: opts.Body}, &pull)
	if err != nil {
		return forges.PullRequest{}, classify(fmt.Sprintf("edit pull request #%d", number), err)
	}
	return pull.pullRequest(), nil
}

// PullRequestURL is {web}/{owner}/{repo}/pulls/{index}, Gitea's html_url.
func (c *Client) PullRequestURL(number int64) string {
	return fmt.Sprintf("%s/%s/%s/pulls/%d", c.webURL, url.PathEscape(c.owner), url.PathEscape(c.repo), number)
}

// FileURL is the file's page on the branch,
// {web}/{owner}/{repo}/src/branch/{branch}/{path}: how Gitea's web UI
// links a branch's file (its html_url in "Get the metadata and contents
// of a file", GET contents/{filepath}?ref=, https://gitea.com/api/swagger#/repository/repoGetContents),
// each segment escaped as Gitea escapes them (util.PathEscapeSegments).
func (c *Client) FileURL(branch, filePath string) string {
	return fmt.Sprintf("%s/%s/%s/src/branch/%s/%s", c.webURL, url.PathEscape(c.owner), url.PathEscape(c.repo),
		forges.EscapePathSegments(branch), forges.EscapePathSegments(filePath))
}

// MergeBaseIntoHead reads the pull request, refuses a moved head, and asks
// Gitea to merge the base into the head: two requests (three when the head
// turns out to be up to date).
func (c *Client) MergeBaseIntoHead(ctx context.Context, number int64, expectedHead string) error {
	op := fmt.Sprintf("merge the base into the head of pull request #%d", number)
	pull, err := c.PullRequest(ctx, number)
	switch {
	case err != nil:
		return err
	case pull.State != forges.PullRequestOpen:
		return forges.Errorf(forges.KindConflict, op, fmt.Errorf("the pull request is %s", pull.State))
	case pull.HeadCommit != expectedHead:
		return forges.Errorf(forges.KindConflict, op, fmt.Errorf("the head is at %s, not at the expected %s", pull.HeadCommit, expectedHead))
	}
	err = c.call(ctx, http.MethodPost, c.pullPath(number, "/update"), url.Values{"style": {"merge"}}, nil, nil)
	switch status := statusOf(err); {
	case err == nil:
		return nil
	case status == http.StatusConflict:
		return forges.Errorf(forges.KindMergeConflict, op, err)
	case status == http.StatusUnprocessableEntity:
		return forges.Errorf(forges.KindConflict, op, err)
	case status == http.StatusInternalServerError:
		if behind, compareErr := c.commitsBehind(ctx, pull.HeadCommit, pull.Base); compareErr == nil && behind == 0 {
			return nil
		}
	}
	return classify(op, err)
}

// commitsBehind is how many commits base has that head lacks (GET
// compare/{head}...{base}, whose total_commits counts the commits of its
// second side the first lacks).
func (c *Client) commitsBehind(ctx context.Context, head, base string) (int, error) {
	var compared struct {
		TotalCommits int `json:"total_commits"`
	}
	err := c.call(ctx, http.MethodGet, c.repoPath("/compare/"+head+"..."+escapeRef(base)), nil, nil, &compared)
	return compared.TotalCommits, err
}

func (c *Client) pullPath(number int64, suffix string) string {
	return c.repoPath("/pulls/" + strconv.FormatInt(number, 10) + suffix)
}
