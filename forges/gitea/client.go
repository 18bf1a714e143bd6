package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
)

var (
	_ forges.Forge            = (*Client)(nil)
	_ forges.Prober           = (*Client)(nil)
	_ forges.DefaultBrancher  = (*Client)(nil)
	_ forges.ConcurrentReader = (*Client)(nil)
	_ forges.ChainCommitter   = (*Client)(nil)
	_ forges.MergeCommitter   = (*Client)(nil)
)

const (
	// defaultHTTPTimeout bounds one request when the caller gives no
	// client. A ChangeFiles of many files runs Gitea's push hooks and can
	// take seconds; callers bound the whole operation with their context.
	defaultHTTPTimeout = 2 * time.Minute
	// maxTreePageSize is the most entries Gitea returns in one page of a
	// recursive tree (its API.DEFAULT_GIT_TREES_PER_PAGE, 1000 by default);
	// asking for more is capped to it.
	maxTreePageSize = 1000
	// apiRoot is where Gitea serves its REST API below the web root.
	apiRoot = "/api/v1"
)

// Options describe one repository on a Gitea server.
type Options struct {
	// BaseURL is the web root of the server (https://gitea.example.com, or
	// https://example.com/gitea behind a path prefix). A trailing /api/v1
	// is accepted.
	BaseURL string
	Owner   string
	// Repo is the repository name; a trailing .git is dropped.
	Repo string
	// Token is an access token that can write the repository's code
	// (scope write:repository). Empty means anonymous, which can read a
	// public repository and nothing else.
	Token string
	// HTTPClient sends the requests; nil means a client with a two-minute
	// timeout.
	HTTPClient *http.Client
	// Now is the clock that dates scratch branches and judges their age;
	// nil means time.Now.
	Now func() time.Time
	// Pusher, when set, makes the commits instead of ChangeFiles and reads
	// heads and trees: the git forge on CloneURL with the same token,
	// which was faster at every size measured (see pushes).
	Pusher Pusher
}

// Pusher is a repository over the Git protocol. Its Commit and
// CommitChain keep forges.Writer's compare-and-swap: receive-pack moves the
// branch only from the expected head, once for a whole chain. Head is the branch as receive-pack sees it; Tree
// fetches the commit's files, which the push then builds on and Blob reads
// without a request.
type Pusher interface {
	forges.Reader
	forges.Writer
	forges.ChainCommitter
}

// CloneURL is the smart-HTTP URL of the repository opts names, where a
// Pusher pushes: Gitea takes an access token as the password of HTTP basic
// auth.
func CloneURL(opts Options) (string, error) {
	webURL, err := webRoot(opts.BaseURL)
	if err != nil {
		return "", err
	}
	return webURL + "/" + opts.Owner + "/" + strings.TrimSuffix(opts.Repo, ".git") + ".git", nil
}

// Client reads and writes one Gitea repository through the API. It is
// safe for concurrent use; the only state it keeps between calls is when
// it next sweeps stale scratch branches.
type Client struct {
	webURL string
	apiURL string
	owner  string
	repo   string
	token  string
	http   *http.Client
	// treePageSize is the per_page of tree reads; tests lower it to
	// exercise paging.
	treePageSize int
	now          func() time.Time
	pusher       Pusher
	// pushRefusedUntil (Unix nanoseconds) is when a client the server
	// refused the Git protocol tries it again; until then it uses the API.
	pushRefusedUntil atomic.Int64
	sweep            struct {
		sync.Mutex
		next time.Time
	}
}

// New checks opts and returns a client. It does not contact the server;
// Probe does.
func New(opts Options) (*Client, error) {
	webURL, err := webRoot(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	repo := strings.TrimSuffix(opts.Repo, ".git")
	if err := checkPathSegment("owner", opts.Owner); err != nil {
		return nil, err
	}
	if err := checkPathSegment("repository", repo); err != nil {
		return nil, err
	}
	httpClient := opts.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{Timeout: defaultHTTPTimeout}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	client := &Client{
		now:          now,
		pusher:       opts.Pusher,
		webURL:       webURL,
		apiURL:       webURL + apiRoot,
		owner:        opts.Owner,
		repo:         repo,
		token:        opts.Token,
		http:         httpClient,
		treePageSize: maxTreePageSize,
	}
	client.sweep.next = now().Add(scratchSweepInterval)
	return client, nil
}

func checkPathSegment(field, value string) error {
	if value == "" || strings.Contains(value, "/") {
		return fmt.Errorf("gitea %s %q: want one non-empty path segment", field, value)
	}
	return nil
}

// webRoot normalises a base URL to scheme://host[:port][/prefix], without
// a trailing slash or /api/v1.
func webRoot(base string) (string, error) {
	parsed, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return "", fmt.Errorf("parsing the gitea base URL: %w", err)
	}
	if parsed.Scheme != "http" && parsed.Scheme != "https" || parsed.Host == "" {
		return "", fmt.Errorf("gitea base URL %q: want http(s)://host[:port][/path]", base)
	}
	if parsed.RawQuery != "" || parsed.Fragment != "" {
		return "", fmt.Errorf("gitea base URL %q: a query or fragment has no meaning here", base)
	}
	path := strings.TrimSuffix(strings.TrimRight(parsed.Path, "/"), apiRoot)
	return parsed.Scheme + "://" + parsed.Host + strings.TrimRight(path, "/"), nil
}

// CommitURL is the commit's page in Gitea's web UI.
func (c *Client) CommitURL(commit string) string {
	return fmt.Sprintf("%s/%s/%s/commit/%s", c.webURL, url.PathEscape(c.owner), url.PathEscape(c.repo), url.PathEscape(commit))
}

// Probe reads the repository with the configured token. Gitea answers 401
// for a token it does not know and 404 for a private repository the token
// cannot see. A repository the token can read but not write is
// ErrForbidden, so a GitProvider reports it before the first commit
// fails: Gitea lists the caller's permissions with the repository.
func (c *Client) Probe(ctx context.Context) error {
	op := fmt.Sprintf("probe repository %s/%s", c.owner, c.repo)
	var repo repositoryResponse
	if err := c.call(ctx, http.MethodGet, c.repoPath(""), nil, nil, &repo); err != nil {
		return classify(op, err)
	}
	switch {
	case repo.Archived:
		return forges.Errorf(forges.KindForbidden, op, errors.New("the repository is archived and read-only"))
	case repo.Mirror:
		return forges.Errorf(forges.KindForbidden, op, errors.New("the repository is a pull mirror and read-only"))
	case repo.Permissions != nil && !repo.Permissions.Push:
		return forges.Errorf(forges.KindForbidden, op, errors.New("the token can read the repository but not push to it"))
	}
	return nil
}

// DefaultBranch is the repository's default_branch (GET /repos/{owner}/{repo},
// https://gitea.com/api/swagger#/repository/repoGet). Gitea names one even
// before the first commit; its "empty" flag says there is none yet.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	var repo repositoryResponse
	if err := c.call(ctx, http.MethodGet, c.repoPath(""), nil, nil, &repo); err != nil {
		return "", classify(fmt.Sprintf("read default branch of %s/%s", c.owner, c.repo), err)
	}
	if repo.Empty {
		return "", nil
	}
	return repo.DefaultBranch, nil
}

// Head returns the commit branch points at. GET branches/{b} matches the
// name exactly. Gitea answers 404 both for a missing branch and for a
// repository without commits; the repository's "empty" flag tells them
// apart, at the cost of a second request only on the 404.
//
// With a Pusher the head is what the Git protocol advertises (one
// ls-remote): the ref that receive-pack compares a push against. Gitea
// updates the branch its API reports from a queue after a push, so the API
// can show the old head for a moment after one.
func (c *Client) Head(ctx context.Context, branch string) (string, error) {
	op := "read head of " + branch
	if branch == "" {
		return "", forges.Errorf(forges.KindNotFound, op, errors.New("empty branch name"))
	}
	if c.pushes() {
		head, err := c.pusher.Head(ctx, branch)
		if !c.refused(err) {
			return head, err
		}
	}
	var found branchResponse
	err := c.call(ctx, http.MethodGet, c.repoPath("/branches/"+escapeRef(branch)), nil, nil, &found)
	if statusOf(err) == http.StatusNotFound {
		return "", c.missingBranchError(ctx, op, err)
	}
	if err != nil {
		return "", classify(op, err)
	}
	if found.Name != branch || found.Commit.ID == "" {
		return "", forges.Errorf(forges.KindNotFound, op,
			fmt.Errorf("gitea answered for branch %q with commit %q", found.Name, found.Commit.ID))
	}
	return found.Commit.ID, nil
}

// missingBranchError explains a 404 for a branch: an empty repository, a
// missing repository, or a missing branch.
func (c *Client) missingBranchError(ctx context.Context, op string, branchErr error) error {
	var repo repositoryResponse
	if err := c.call(ctx, http.MethodGet, c.repoPath(""), nil, nil, &repo); err != nil {
		return classify(op, err)
	}
	if repo.Empty {
		return forges.Errorf(forges.KindEmptyRepository, op, branchErr)
	}
	return forges.Errorf(forges.KindNotFound, op, branchErr)
}
