// Package github is the forge for GitHub and GitHub Enterprise Server. It
// never clones: it reads refs, trees and blobs through the Git Database API
// and makes every commit with a fixed number of requests, whatever the
// number of files:
//
//  1. POST git/trees: base_tree is the expected head's tree, text files
//     inline (content), deletions as sha null;
//  2. POST git/commits: parents = [expected head], author, committer, their
//     dates, and an optional signature;
//  3. PATCH git/refs/heads/B with force false: GitHub refuses an update that
//     is not a fast forward with 422, which is the compare-and-swap.
//
// A commit with a merge parent (pull-request mode starting its head afresh
// from the base) builds its tree on the merge parent's tree in 1 and names
// [expected head, merge parent] as parents in 2; 3 is the same
// fast-forward. A new branch ends with POST git/refs instead. A chain of commits
// (CommitChain) repeats 1 and 2 for each, each on the one before, and ends
// with one ref update for them all. Binary files and files over
// 1 MiB cost one POST git/blobs each. An empty repository takes its first
// commit through the contents API (see bootstrapChain).
//
// Authentication is a token or a GitHub App installation (installation
// tokens through ghinstallation, refreshed before they expire and once more
// when GitHub refuses one). Every response's x-ratelimit-* headers feed the
// Budget; a rate-limited answer is KindRateLimited with the wait GitHub
// asked for, and the client sends nothing GitHub would refuse until then.
//
// Commit identity: in author mode (the default) the client sends the author
// and committer it is given, and the signature when a signer is set. In
// verified mode it sends none of them, because GitHub signs an App's API
// commit, and shows it as Verified, only then; the author, when it is not
// the committer, goes into a Co-authored-by trailer, which GitHub shows.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
)

// DefaultAPIURL is GitHub.com's REST API.
const DefaultAPIURL = "https://api.github.com"

// DefaultWebURL is GitHub.com's web UI, for commit links.
const DefaultWebURL = "https://github.com"

// defaultTimeout bounds one request, so a stalled connection does not hold
// a branch worker forever.
const defaultTimeout = 60 * time.Second

// Options configure a Client. Exactly one of Token and App is set.
type Options struct {
	// Owner and Repo name the repository (github.com/{Owner}/{Repo}).
	Owner, Repo string
	// APIURL is the REST API base URL: DefaultAPIURL, or
	// https://HOSTNAME/api/v3 for GitHub Enterprise Server.
	APIURL string
	// WebURL is the web UI base URL for CommitURL: DefaultWebURL, or the
	// Enterprise Server's https://HOSTNAME.
	WebURL string
	// Token is a personal access token or any other token the API accepts.
	Token string
	// App authenticates as a GitHub App installation.
	App *AppCredentials
	// Transport carries the requests; http.DefaultTransport when nil.
	Transport http.RoundTripper
	// Now is the clock rate-limit waits are measured on; time.Now when nil.
	Now func() time.Time
	// Verified lets GitHub sign commits as the App (verified mode): no
	// author, committer or signature is sent.
	Verified bool
	// ContentPerMinute and ContentPerHour are the secondary limits on
	// content-creating requests the client paces itself to; GitHub's
	// documented 80 and 500 when zero. Ignored when Pacer is set.
	ContentPerMinute, ContentPerHour int
	// Pacer, when set, is shared with the other clients of the same
	// installation or token, so their requests count against one limit.
	Pacer *ContentPacer
}

// AppCredentials identify a GitHub App installation.
type AppCredentials struct {
	AppID          int64
	InstallationID int64
	// PrivateKey is the App's PEM private key, which signs the JWT
	// exchanged for installation tokens.
	PrivateKey []byte
}

// Client is one repository on GitHub.
type Client struct {
	api          *github.Client
	owner, repo  string
	webURL       string
	limits       *rateLimits
	commitTrees  *treeCache
	unpublished  unpublished
	textMaxBytes int
	verified     bool
}

var (
	_ forges.Forge           = (*Client)(nil)
	_ forges.Prober          = (*Client)(nil)
	_ forges.Budgeter        = (*Client)(nil)
	_ forges.DefaultBrancher = (*Client)(nil)
	_ forges.ChainCommitter  = (*Client)(nil)
	_ forges.MergeCommitter  = (*Client)(nil)
)

// New builds a client. It does not contact GitHub; Probe does.
func New(opts Options) (*Client, error) {
	if opts.Owner == "" || opts.Repo == "" {
		return nil, errors.New("github: owner and repository name are required")
	}
	if (opts.Token == "") == (opts.App == nil) {
		return nil, errors.New("github: set exactly one of a token and a GitHub App")
	}
	apiURL := strings.TrimRight(withDefault(opts.APIURL, DefaultAPIURL), "/")
	if _, err := url.Parse(apiURL); err != nil {
		return nil, fmt.Errorf("github: API URL %q: %w", apiURL, err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	base := opts.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	pacer := opts.Pacer
	if pacer == nil {
		pacer = NewContentPacer(now, opts.ContentPerMinute, opts.ContentPerHour)
	}
	limits := &rateLimits{now: now, content: pacer}
	var authenticated http.RoundTripper = base
	clientOpts := []github.ClientOptionsFunc{
		github.WithURLs(new(apiURL+"/"), nil),
		// go-github's own pre-flight rate-limit check runs on the wall
		// clock; rateLimits does the same on Options.Now.
		github.WithDisableRateLimitCheck(),
		github.WithTimeout(defaultTimeout),
		github.WithUserAgent("gitops-reverser"),
	}
	if opts.App != nil {
		app, err := newAppTransport(base, apiURL, *opts.App)
		if err != nil {
			return nil, err
		}
		authenticated = app
	} else {
		clientOpts = append(clientOpts, github.WithAuthToken(opts.Token))
	}
	clientOpts = append(clientOpts, github.WithTransport(&limitTransport{next: authenticated, limits: limits}))
	api, err := github.NewClient(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return &Client{
		api: api, owner: opts.Owner, repo: opts.Repo,
		webURL: strings.TrimRight(withDefault(opts.WebURL, DefaultWebURL), "/"),
		limits: limits, commitTrees: newTreeCache(), textMaxBytes: inlineContentMaxBytes, verified: opts.Verified,
	}, nil
}

func withDefault(value, fallback string) string {
	if value == "" {
		return fallback
	}
	return value
}

// CommitURL is https://github.com/{owner}/{repo}/commit/{sha} on the
// configured web host.
func (c *Client) CommitURL(commit string) string {
	return fmt.Sprintf("%s/%s/%s/commit/%s", c.webURL, c.owner, c.repo, commit)
}

// Probe reads the repository ("Get a repository",
// https://docs.github.com/rest/repos/repos#get-a-repository), which answers
// 401 for refused credentials and 404 for a repository the credentials
// cannot see.
func (c *Client) Probe(ctx context.Context) error {
	_, _, err := c.api.Repositories.Get(ctx, c.owner, c.repo)
	return c.classify("probe "+c.owner+"/"+c.repo, err)
}

// DefaultBranch is the repository's default_branch ("Get a repository").
// GitHub names one even before the first commit, so for an empty repository
// the branch is read as well ("Get a reference" answers 409 "Git Repository
// is empty.") and the answer is none: two requests, asked only when a
// branch worker's branch does not exist yet.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	repo, _, err := c.api.Repositories.Get(ctx, c.owner, c.repo)
	if err != nil {
		return "", c.classify("read default branch of "+c.owner+"/"+c.repo, err)
	}
	name := repo.GetDefaultBranch()
	if name == "" {
		return "", nil
	}
	switch _, err := c.Head(ctx, name); {
	case errors.Is(err, forges.ErrEmptyRepository):
		return "", nil
	case err != nil && !errors.Is(err, forges.ErrNotFound):
		return "", err
	}
	return name, nil
}

// Budget is the tightest request budget: the primary one of the last
// response that reported one, or the secondary limit on content creation
// this client paces itself to, whichever has less left.
func (c *Client) Budget() (forges.Budget, bool) { return c.limits.current() }
