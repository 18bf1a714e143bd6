// Package gitlab is the forge for GitLab (gitlab.com and self-managed),
// through its REST API v4 with gitlab.com/gitlab-org/api/client-go. It
// needs no clone: heads, trees and blobs are read through the API, and a
// commit is one POST /projects/:id/repository/commits carrying every file
// change as an action.
//
// # What GitLab guarantees, and what this client adds
//
// GitLab's commits API has no compare-and-swap on the branch head
// (https://docs.gitlab.com/api/commits/#create-a-commit-with-multiple-files-and-actions):
// a commit is made on top of whatever the branch points at. What it does
// offer is per file:
//   - update and delete actions carry last_commit_id (this client sends
//     the expected head); GitLab refuses the commit with 400 "The
//     file has changed since you started editing it" when the file's last
//     change on the branch differs from its last change as of that commit
//     (Files::BaseService#file_has_changed?,
//     https://gitlab.com/gitlab-org/gitlab/-/blob/master/app/services/files/base_service.rb,
//     as in GitLab 16-era sources on; older releases compared
//     last_commit_id with the file's own last commit, under which naming
//     the head would refuse every file the head commit did not touch);
//   - create refuses a path that exists ("A file with this name already
//     exists"), update and delete a path that does not.
//
// So a concurrent writer's change to a file this commit also touches is
// always refused, never overwritten. For the head itself the client reads
// the branch right before the POST and refuses a moved head as
// forges.ErrConflict without writing, and checks the new commit's parent
// afterwards. A writer that lands in the milliseconds between that read and
// the POST, touching only other files, ends up under this commit: their
// change is kept (nothing of theirs is overwritten or reverted), but the
// branch did not point at the expected head. The client then returns
// forges.ErrConflict wrapping a *MovedHeadError rather than success, so the
// caller re-reads the head: its index of the tree would otherwise miss the
// other writer's files, and a later commit planned from that stale index
// could pass GitLab's per-file checks and revert them. Re-planning on the
// new head finds this commit's content already there.
//
// # Cost
//
// GitLab must be told create or update for every path: each change's base
// blob says (gitfile.Change.BaseBlob: none for a path the parent does not
// have), so the client lists no tree and keeps none. A commit costs two
// requests, the branch read and the POST, however many files it touches.
// A base blob that is wrong about a path's existence is refused by GitLab
// (create of an existing path, update or delete of a missing one) as a
// conflict, never written over.
//
// # Limitations
//
//   - The committer is always the token's user and both dates are GitLab's
//     clock: the API takes author_name and author_email and nothing else
//     (lib/api/commits.rb keeps only branch, commit_message, actions,
//     start_branch, start_sha, start_project, author_email, author_name,
//     stats and force). CommitRequest's Committer, Author.When and
//     Committer.When are not recorded.
//   - No commit signatures: the API cannot carry one, so a request with a
//     Signer is refused.
//   - A new branch starts from an existing commit (start_sha) or is the
//     first branch of an empty repository; GitLab cannot start an
//     unrelated (orphan) history through the API.
//   - CommitResult.Blobs are Git's SHA-1 blob ids computed locally; paths
//     GitLab stores in LFS (.gitattributes) would have other ids.
//   - Empty commits are not possible; a request whose changes are all
//     deletions of absent files makes no commit and returns the head.
package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/configbutler/gitops-reverser/forges"
)

var (
	_ forges.Forge           = (*Client)(nil)
	_ forges.Prober          = (*Client)(nil)
	_ forges.Budgeter        = (*Client)(nil)
	_ forges.DefaultBrancher = (*Client)(nil)
	_ forges.MergeCommitter  = (*Client)(nil)
)

// Options configures a Client.
type Options struct {
	// APIURL is the REST API base, "https://gitlab.com/api/v4" or a
	// self-managed instance's. "/api/v4" is added when missing.
	APIURL string
	// Project is the project's full path ("group/subgroup/repo") or its
	// numeric id.
	Project string
	// Token is a personal, group or project access token with the api
	// scope, sent as PRIVATE-TOKEN.
	Token string
	// HTTPClient sends the requests; nil means a default client. Its
	// transport is wrapped to read the rate-limit headers.
	HTTPClient *http.Client
}

// Client is the forge for one GitLab project. It is safe for concurrent
// use.
type Client struct {
	api     *gl.Client
	project string
	// projectWebURL is where CommitURL points; "" when Project is an id.
	projectWebURL string
	budget        *budgetRecorder
}

// New builds a Client. It does not contact GitLab; Probe does.
func New(o Options) (*Client, error) {
	if o.APIURL == "" || o.Project == "" {
		return nil, errors.New("gitlab forge: APIURL and Project are required")
	}
	if o.Token == "" {
		return nil, errors.New("gitlab forge: a token is required")
	}
	base := http.DefaultClient
	if o.HTTPClient != nil {
		base = o.HTTPClient
	}
	budget := &budgetRecorder{}
	httpClient := *base
	httpClient.Transport = &budgetTransport{next: base.Transport, budget: budget}
	api, err := gl.NewClient(o.Token,
		gl.WithBaseURL(o.APIURL),
		gl.WithHTTPClient(&httpClient),
		// The branch worker owns retrying: it honours Retry-After, widens
		// its commit window and keeps its writes. The library's own retry
		// loop and limiter would sleep inside a call, spend budget the
		// worker cannot see, and replay a POST whose outcome is unknown.
		gl.WithoutRetries(),
		gl.WithCustomLimiter(noWait{}),
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab forge: %w", err)
	}
	project := strings.Trim(o.Project, "/")
	return &Client{
		api:           api,
		project:       project,
		projectWebURL: projectWebURL(o.APIURL, project),
		budget:        budget,
	}, nil
}

// projectWebURL is the project's page: the API base without /api/v4, then
// the project path. A numeric id has no path to build it from.
func projectWebURL(apiURL, project string) string {
	if _, err := strconv.Atoi(project); err == nil {
		return ""
	}
	base := strings.TrimSuffix(strings.TrimSuffix(apiURL, "/"), "/api/v4")
	return base + "/" + project
}

// CommitURL is the commit's page, {web}/{project}/-/commit/{sha} (the
// web_url the commits API returns), or "" when the project was given by
// id.
func (c *Client) CommitURL(commit string) string {
	if c.projectWebURL == "" {
		return ""
	}
	return c.projectWebURL + "/-/commit/" + commit
}

// Probe reads the project: it answers with the configured token, or the
// error says why not (unauthorized, not found, ...).
// https://docs.gitlab.com/api/projects/#get-a-single-project
func (c *Client) Probe(ctx context.Context) error {
	_, resp, err := c.api.Projects.GetProject(c.project, nil, gl.WithContext(ctx))
	return classify("read project "+c.project, resp, err)
}

// DefaultBranch is the project's default_branch
// (https://docs.gitlab.com/api/projects/#get-a-single-project). Since GitLab
// 14.1 an empty project reports the name its first branch will get
// (gitlab-org/gitlab!64944), earlier releases null; empty_repo says there is
// no branch yet either way.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	project, resp, err := c.api.Projects.GetProject(c.project, nil, gl.WithContext(ctx))
	if err != nil {
		return "", classify("read default branch of project "+c.project, resp, err)
	}
	if project.EmptyRepo {
		return "", nil
	}
	return project.DefaultBranch, nil
}

// Budget is the rate-limit budget the last response reported.
func (c *Client) Budget() (forges.Budget, bool) { return c.budget.get() }

// noWait is a limiter that never waits: the client-go default limiter
// paces requests from RateLimit-Limit, which would stall the worker
// instead of letting it widen its commit window.
type noWait struct{}

func (noWait) Wait(context.Context) error { return nil }

// budgetRecorder keeps the budget of the last response that reported
// one.
type budgetRecorder struct {
	mu     sync.Mutex
	budget forges.Budget
	ok     bool
}

func (r *budgetRecorder) get() (forges.Budget, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.budget, r.ok
}

// observe reads RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset
// (Unix time), which GitLab sends on API responses
// (https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/#response-headers).
// A response without them leaves the last budget in place.
func (r *budgetRecorder) observe(h http.Header) {
	limit, errLimit := strconv.Atoi(h.Get("RateLimit-Limit"))
	remaining, errRemaining := strconv.Atoi(h.Get("RateLimit-Remaining"))
	if errLimit != nil || errRemaining != nil {
		return
	}
	var reset time.Time
	if unix, err := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64); err == nil {
		reset = time.Unix(unix, 0)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.budget = forges.Budget{Limit: limit, Remaining: remaining, Reset: reset}
	r.ok = true
}

// budgetTransport reports every response's rate-limit headers, errors
// included, since a 429 carries the most useful ones.
type budgetTransport struct {
	next   http.RoundTripper
	budget *budgetRecorder
}

func (t *budgetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if resp != nil {
		t.budget.observe(resp.Header)
	}
	return resp, err
}
