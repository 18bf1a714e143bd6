package github

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"

	"github.com/configbutler/gitops-reverser/forges"
)

// Rate limits, as "Rate limits for the REST API" documents them
// (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api):
// every response carries x-ratelimit-limit, -remaining, -used, -reset (UTC
// epoch seconds) and -resource. Past the primary limit GitHub answers 403 or
// 429 with x-ratelimit-remaining 0, and "you should not retry your request
// until after the time specified by the x-ratelimit-reset header"; past a
// secondary limit it answers 403 or 429, and "if the retry-after response
// header is present, you should not retry your request until after that many
// seconds has elapsed ... Otherwise, wait for at least one minute".
// "Continuing to make requests while you are rate limited may result in the
// banning of your integration", so the client refuses locally until then.

// rateLimits is the budget GitHub last reported and how long the client
// must hold back requests.
type rateLimits struct {
	now     func() time.Time
	content *ContentPacer

	mu     sync.Mutex
	budget forges.Budget
	known  bool
	// allUntil holds back every request (primary limit exhausted, or a
	// secondary limit hit by a read); writesUntil holds back
	// content-creating requests (a secondary limit hit by one).
	allUntil, writesUntil time.Time
}

// current is the tightest budget: the primary one GitHub last reported, or
// the secondary limit on content creation when less of it is left.
func (l *rateLimits) current() (forges.Budget, bool) {
	l.mu.Lock()
	primary, known := l.budget, l.known
	l.mu.Unlock()
	content, used := l.content.budget()
	switch {
	case !used:
		return primary, known
	case !known:
		return content, true
	}
	return tighter(primary, content), true
}

// wait is how long a request with method must still be held back.
func (l *rateLimits) wait(method string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	until := l.allUntil
	if createsContent(method) && l.writesUntil.After(until) {
		until = l.writesUntil
	}
	return until.Sub(l.now())
}

// holdBack records a wait GitHub asked for after a request with method.
func (l *rateLimits) holdBack(method string, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	until := l.now().Add(wait)
	if createsContent(method) {
		l.writesUntil = later(l.writesUntil, until)
		return
	}
	l.allUntil = later(l.allUntil, until)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// observe records the primary budget a response reports. A budget at zero
// holds back every request until it resets, without asking GitHub again.
func (l *rateLimits) observe(resp *http.Response) {
	limit, errLimit := strconv.Atoi(resp.Header.Get("X-RateLimit-Limit"))
	remaining, errRemaining := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	reset, errReset := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	resource := resp.Header.Get("X-RateLimit-Resource")
	if errLimit != nil || errRemaining != nil || errReset != nil || (resource != "" && resource != "core") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.budget = forges.Budget{Limit: limit, Remaining: remaining, Reset: time.Unix(reset, 0)}
	l.known = true
	if remaining == 0 {
		l.allUntil = later(l.allUntil, time.Unix(reset, 0))
	}
}

// createsContent: GitHub's secondary limit counts "content-generating
// requests", which in the REST API are its POST, PATCH, PUT and DELETE
// requests.
func createsContent(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// minimumWait keeps a wait that has already run out (clock skew) from
// turning into an immediate retry loop.
const minimumWait = time.Second

// rateLimitWait reads how long GitHub asked to wait from a 403 or 429
// response; ok is false when the response is not a rate limit.
func rateLimitWait(resp *http.Response, message string, now time.Time) (wait time.Duration, ok bool) {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	if seconds, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		return max(time.Duration(seconds)*time.Second, minimumWait), true
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(reset, 0).Sub(now), minimumWait), true
		}
		return time.Minute, true
	}
	if resp.StatusCode == http.StatusTooManyRequests || mentionsSecondaryLimit(message) {
		return time.Minute, true
	}
	return 0, false
}

// limitTransport refuses requests while GitHub asked to wait and records
// the budget of every response.
type limitTransport struct {
	next   http.RoundTripper
	limits *rateLimits
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if wait := t.limits.wait(req.Method); wait > 0 {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, &forges.Error{Kind: forges.KindRateLimited, Op: req.Method + " " + req.URL.Path, RetryAfter: wait,
			Err: errors.New("GitHub asked to wait before this request; not sent")}
	}
	if createsContent(req.Method) {
		// Counted when sent: GitHub may count it even if the answer is lost.
		t.limits.content.record()
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	t.limits.observe(resp)
	return resp, nil
}

// appTransport authenticates as a GitHub App installation. ghinstallation
// exchanges the App's JWT for an installation token
// (https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-an-installation-access-token-for-a-github-app)
// and refreshes it a minute before it expires. A token GitHub refuses
// anyway (revoked, or expired early on a skewed clock) gets one more
// exchange and the request is sent again: a 401 changed nothing.
type appTransport struct {
	base   http.RoundTripper
	apiURL string
	creds  AppCredentials

	mu      sync.Mutex
	current *ghinstallation.Transport
}

func newAppTransport(base http.RoundTripper, apiURL string, creds AppCredentials) (*appTransport, error) {
	t := &appTransport{base: base, apiURL: apiURL, creds: creds}
	installation, err := t.newInstallation()
	if err != nil {
		return nil, err
	}
	t.current = installation
	return t, nil
}

// newInstallation builds an installation transport with no token yet, so
// its first request exchanges the JWT.
func (t *appTransport) newInstallation() (*ghinstallation.Transport, error) {
	installation, err := ghinstallation.New(t.base, t.creds.AppID, t.creds.InstallationID, t.creds.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("github: GitHub App %d: %w", t.creds.AppID, err)
	}
	installation.BaseURL = t.apiURL
	return installation, nil
}

func (t *appTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	installation := t.current
	t.mu.Unlock()
	resp, err := installation.RoundTrip(req)
	replayable := req.Body == nil || req.GetBody != nil
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !replayable {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	replay := req.Clone(req.Context())
	if req.GetBody != nil {
		// The first attempt consumed and closed the body.
		if replay.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	if installation, err = t.renew(installation); err != nil {
		return nil, err
	}
	return installation.RoundTrip(replay)
}

// renew replaces the installation transport that was refused, unless
// another request already did.
func (t *appTransport) renew(refused *ghinstallation.Transport) (*ghinstallation.Transport, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current != refused {
		return t.current, nil
	}
	fresh, err := t.newInstallation()
	if err != nil {
		return nil, err
	}
	t.current = fresh
	return fresh, nil
}

// treeCache maps commits to their root trees, so a commit on a head this
// client made or read needs no request to learn its base tree. Commits are
// immutable, so entries never go stale; the cache is dropped whole when it
// reaches its bound, which only costs one request per head later.
type treeCache struct {
	mu    sync.Mutex
	trees map[string]string
}

const treeCacheEntries = 4096

func newTreeCache() *treeCache { return &treeCache{trees: map[string]string{}} }

func (c *treeCache) get(commit string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tree, ok := c.trees[commit]
	return tree, ok
}

func (c *treeCache) put(commit, tree string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.trees) >= treeCacheEntries {
		c.trees = map[string]string{}
	}
	c.trees[commit] = tree
}
