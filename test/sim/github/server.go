// Package github simulates the subset of GitHub's REST API that the github
// forge uses: repositories, the Git Database API (refs, trees, blobs,
// commits), the contents API for the first commit of an empty repository,
// pull requests (list, create, get, update, update the branch, merge),
// token and GitHub App authentication, and the primary and secondary rate
// limits. Repositories hold real Git objects (go-git's memory storage), so
// blob, tree and commit ids are the SHA-1s Git computes.
//
// Every behaviour is taken from GitHub's REST documentation, cited next to
// the code that implements it. Where the documentation names a status but
// not the exact message, the message is the one GitHub is known to send
// (quoted in client issue trackers) or, failing that, a plain description.
package github

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Server is a running simulator. All state is behind one mutex and every
// request is served under it, so requests are linearizable: a ref update
// either sees an external commit or precedes it.
type Server struct {
	mu       sync.Mutex
	http     *httptest.Server
	config   config
	mux      *http.ServeMux
	repos    map[string]*repository
	nextID   int64
	auth     authState
	limits   limitState
	requests []Request
}

// Request is one request the simulator answered, for tests that count
// requests (a commit must cost a fixed number of them).
type Request struct {
	Method string
	// Path is the URL path, without the query.
	Path   string
	Query  string
	Status int
	// Credential names who authenticated: "token", "installation", "app"
	// (a JWT), or "" when nobody did.
	Credential string
	At         time.Time
}

type config struct {
	now                  func() time.Time
	primaryLimit         int
	primaryStatus        int
	contentPerMinute     int
	contentPerHour       int
	treeEntryLimit       int
	installationTokenTTL time.Duration
	// mergeableAtOnce: the mergeability job has finished before the
	// first answer (mergeability.go).
	mergeableAtOnce bool
}

// Option configures a simulator.
type Option func(*config)

// WithClock replaces the wall clock, for rate-limit windows and token
// expiry. JWTs are checked against it as well, so a clock far from the wall
// clock refuses JWTs that a real client signs with time.Now.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPrimaryLimit sets the requests per hour of each credential (default
// 5,000, GitHub's limit for personal access tokens and installations) and
// the status of a refused request, 403 or 429 (both documented).
func WithPrimaryLimit(perHour, status int) Option {
	return func(c *config) { c.primaryLimit, c.primaryStatus = perHour, status }
}

// WithContentLimit sets the secondary limit on content-creating requests
// (POST, PATCH, PUT, DELETE): default 80 a minute and 500 an hour.
func WithContentLimit(perMinute, perHour int) Option {
	return func(c *config) { c.contentPerMinute, c.contentPerHour = perMinute, perHour }
}

// WithTreeEntryLimit sets how many entries a recursive tree lists before it
// is truncated (default 100,000, GitHub's documented limit).
func WithTreeEntryLimit(n int) Option { return func(c *config) { c.treeEntryLimit = n } }

// WithMergeableAtOnce makes the mergeability job finish before the answer
// that starts it, so a pull request never reads mergeable null: the other
// schedule GitHub's documentation allows (mergeability.go). By default the
// first answer after the head or base moved is null.
func WithMergeableAtOnce() Option { return func(c *config) { c.mergeableAtOnce = true } }

// WithInstallationTokenTTL sets how long an installation token lives
// (default one hour, as documented).
func WithInstallationTokenTTL(d time.Duration) Option {
	return func(c *config) { c.installationTokenTTL = d }
}

// Start starts a simulator on a local port. Close it when done.
func Start(opts ...Option) *Server {
	cfg := config{
		now:          time.Now,
		primaryLimit: 5000, primaryStatus: http.StatusForbidden,
		contentPerMinute: 80, contentPerHour: 500,
		treeEntryLimit:       100_000,
		installationTokenTTL: time.Hour,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	s := &Server{config: cfg, repos: map[string]*repository{}, auth: newAuthState(), limits: newLimitState()}
	s.mux = s.routes()
	s.http = httptest.NewServer(s)
	return s
}

// URL is the API base URL, the equivalent of https://api.github.com.
func (s *Server) URL() string { return s.http.URL }

// Close stops the simulator.
func (s *Server) Close() { s.http.Close() }

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}", s.getRepository)
	mux.HandleFunc("GET /repos/{owner}/{repo}/git/ref/{ref...}", s.getRef)
	mux.HandleFunc("POST /repos/{owner}/{repo}/git/refs", s.createRef)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/git/refs/{ref...}", s.updateRef)
	mux.HandleFunc("GET /repos/{owner}/{repo}/git/trees/{sha}", s.getTree)
	mux.HandleFunc("POST /repos/{owner}/{repo}/git/trees", s.createTree)
	mux.HandleFunc("GET /repos/{owner}/{repo}/git/blobs/{sha}", s.getBlob)
	mux.HandleFunc("POST /repos/{owner}/{repo}/git/blobs", s.createBlob)
	mux.HandleFunc("GET /repos/{owner}/{repo}/git/commits/{sha}", s.getCommit)
	mux.HandleFunc("GET /repos/{owner}/{repo}/compare/{basehead}", s.compareCommits)
	mux.HandleFunc("POST /repos/{owner}/{repo}/git/commits", s.createCommit)
	mux.HandleFunc("PUT /repos/{owner}/{repo}/contents/{path...}", s.putContents)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.listPulls)
	mux.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.createPull)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}", s.getPull)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/pulls/{number}", s.updatePull)
	mux.HandleFunc("PUT /repos/{owner}/{repo}/pulls/{number}/update-branch", s.updatePullBranch)
	mux.HandleFunc("PUT /repos/{owner}/{repo}/pulls/{number}/merge", s.mergePull)
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", s.createInstallationToken)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { notFound(w, "https://docs.github.com/rest") })
	return mux
}

type credentialKey struct{}

// ServeHTTP authenticates, applies the rate limits and logs every request
// around the endpoint handlers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recorder := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	entry := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, At: s.config.now()}
	defer func() {
		entry.Status = recorder.status
		s.requests = append(s.requests, entry)
	}()
	if strings.HasPrefix(r.URL.Path, "/app/") {
		// App endpoints authenticate with a JWT, checked by the handler.
		entry.Credential = "app"
		s.mux.ServeHTTP(recorder, r)
		return
	}
	cred, ok := s.authenticate(recorder, r)
	if !ok {
		return
	}
	entry.Credential = cred.kind
	if !s.admit(recorder, r, cred) {
		return
	}
	s.mux.ServeHTTP(recorder, r.WithContext(context.WithValue(r.Context(), credentialKey{}, cred)))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func repoKey(owner, name string) string { return strings.ToLower(owner + "/" + name) }

// lookupRepository finds the repository of the request path, answering 404
// when it does not exist ("The name is not case sensitive", docRepos).
func (s *Server) lookupRepository(w http.ResponseWriter, r *http.Request) (*repository, bool) {
	repo, ok := s.repos[repoKey(r.PathValue("owner"), r.PathValue("repo"))]
	if !ok {
		notFound(w, docRepos)
	}
	return repo, ok
}

func (s *Server) apiURL(repo *repository, format string, args ...any) string {
	return s.http.URL + "/repos/" + repo.owner + "/" + repo.name + fmt.Sprintf(format, args...)
}

func (s *Server) htmlURL(repo *repository, format string, args ...any) string {
	return "https://github.com/" + repo.owner + "/" + repo.name + fmt.Sprintf(format, args...)
}
