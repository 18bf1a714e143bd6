// Package gitlab is a simulator of the part of GitLab's REST API (v4) the
// gitlab forge uses, backed by real Git objects in memory (go-git), so the
// commit ids, tree ids and blob ids it answers are the ones Git computes.
//
// What it simulates, each next to the documentation or GitLab source it
// follows:
//   - projects addressed by id or URL-encoded path, private: an anonymous
//     request is answered as if the project did not exist;
//   - branches, the recursive repository tree (offset and keyset
//     pagination), raw blobs, single commits;
//   - merge requests: list, create (409 for a second open one), get,
//     update (title, description, close), merge (api_merge_requests.go);
//   - the commits API with create/update/delete/move/chmod actions,
//     start_branch/start_sha, last_commit_id refusals and Gitaly's index
//     errors, committer = the token's user, author from author_name/email,
//     both dates = the server's clock (the API takes no dates);
//   - PRIVATE-TOKEN and Authorization: Bearer, 401 for an unknown token,
//     403 for a token that may not push;
//   - RateLimit-* headers on every response and 429 with Retry-After once
//     a token's budget for the window is spent (SetRateLimit).
//
// It does not simulate: form-encoded commit bodies, force, start_project,
// LFS, protected branches, merge methods other than the merge commit, the
// rebase API, line-level merges (a file both sides changed conflicts;
// history walks follow first parents), or
// GitLab's per-endpoint limits.
package gitlab

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// User is who a token authenticates as. GitLab records this user as the
// committer of every commit made through the API.
type User struct {
	Username string
	Name     string
	Email    string
	// ReadOnly users may read but not push (a Reporter, or a token
	// without write access).
	ReadOnly bool
}

// Request is one request the server received.
type Request struct {
	Method string
	// Path is below /api/v4, decoded ("/projects/group/repo/repository/tree").
	Path   string
	Query  url.Values
	User   string
	Status int
}

// Server is a running simulator. Its methods are safe for concurrent use;
// every API call runs under one lock, so a commit is atomic.
type Server struct {
	http *httptest.Server

	mu         sync.Mutex
	now        func() time.Time
	projects   map[int]*project
	byPath     map[string]*project
	nextID     int
	tokens     map[string]User
	limit      rateLimit
	throttles  map[string]*throttle
	requests   []Request
	webBaseURL string
}

// Start runs a simulator on a local port. Close it when done.
func Start() *Server {
	s := &Server{
		now:       func() time.Time { return time.Now().UTC().Truncate(time.Second) },
		projects:  map[int]*project{},
		byPath:    map[string]*project{},
		nextID:    1,
		tokens:    map[string]User{},
		throttles: map[string]*throttle{},
	}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	s.webBaseURL = s.http.URL
	return s
}

// URL is the server's base URL; the API is below URL()+"/api/v4".
func (s *Server) URL() string { return s.http.URL }

// APIURL is URL()+"/api/v4".
func (s *Server) APIURL() string { return s.http.URL + "/api/v4" }

// Close stops the server.
func (s *Server) Close() { s.http.Close() }

// AddToken lets token authenticate as user.
func (s *Server) AddToken(token string, user User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = user
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests forgets the requests received so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// statusRecorder remembers the status a handler wrote, for the request
// log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	user, known, presented := s.authenticate(r)
	s.handle(rec, r, user, known, presented)
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/api/v4"), Query: r.URL.Query(),
		User: user.Username, Status: rec.status,
	})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request, user User, known, presented bool) {
	// Rack::Attack throttles before the API authenticates, so even a
	// refused token spends budget.
	if !s.admit(w, user.Username) {
		return
	}
	// https://docs.gitlab.com/api/rest/troubleshooting/#status-codes
	// 401: "The user isn't authenticated. A valid user token is necessary."
	if presented && !known {
		writeMessage(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	segments, ok := apiSegments(r.URL.EscapedPath())
	if !ok || len(segments) < 2 || segments[0] != "projects" {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "404 Not Found"})
		return
	}
	p := s.findProject(segments[1])
	// Private projects are invisible to anonymous requests: GitLab answers
	// 404, not 401, so that their existence does not leak.
	// https://docs.gitlab.com/api/rest/troubleshooting/#status-codes
	if p == nil || !known {
		writeMessage(w, http.StatusNotFound, "404 Project Not Found")
		return
	}
	s.route(w, r, p, user, segments[2:])
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, p *project, user User, rest []string) {
	if s.routeMergeRequests(w, r, p, user, rest) {
		return
	}
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case len(rest) == 0 && get:
		s.getProject(w, p)
	case len(rest) == 3 && rest[0] == "repository" && rest[1] == "branches" && get:
		s.getBranch(w, p, rest[2])
	case len(rest) == 2 && rest[0] == "repository" && rest[1] == "tree" && get:
		s.getTree(w, r, p)
	case len(rest) == 4 && rest[0] == "repository" && rest[1] == "blobs" && rest[3] == "raw" && get:
		s.getRawBlob(w, p, rest[2])
	case len(rest) == 3 && rest[0] == "repository" && rest[1] == "commits" && get:
		s.getCommit(w, p, rest[2])
	case len(rest) == 2 && rest[0] == "repository" && rest[1] == "merge_base" && get:
		s.getMergeBase(w, r.URL.Query(), p)
	case len(rest) == 2 && rest[0] == "repository" && rest[1] == "commits" && r.Method == http.MethodPost:
		s.postCommit(w, r, p, user)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "404 Not Found"})
	}
}

// authenticate reads the token the way GitLab does: the PRIVATE-TOKEN
// header or an OAuth-style bearer token.
// https://docs.gitlab.com/api/rest/authentication/
func (s *Server) authenticate(r *http.Request) (user User, known, presented bool) {
	token := r.Header.Get("PRIVATE-TOKEN")
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token == "" {
		token = bearer
	}
	if token == "" {
		return User{}, false, false
	}
	user, known = s.tokens[token]
	return user, known, true
}

// apiSegments splits an escaped path below /api/v4 into decoded segments.
// Splitting before decoding keeps a URL-encoded project path
// ("group%2Frepo") or branch name ("feature%2Fx") one segment.
func apiSegments(escapedPath string) ([]string, bool) {
	rest, ok := strings.CutPrefix(escapedPath, "/api/v4/")
	if !ok {
		return nil, false
	}
	raw := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	segments := make([]string, len(raw))
	for i, segment := range raw {
		decoded, err := url.PathUnescape(segment)
		if err != nil {
			return nil, false
		}
		segments[i] = decoded
	}
	return segments, true
}

// findProject takes a numeric id or a full path, as every project route
// does. https://docs.gitlab.com/api/rest/#namespaced-paths
func (s *Server) findProject(idOrPath string) *project {
	if id, err := strconv.Atoi(idOrPath); err == nil {
		return s.projects[id]
	}
	return s.byPath[idOrPath]
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// writeMessage is GitLab's error body: {"message": "..."}.
// https://docs.gitlab.com/api/rest/troubleshooting/#status-codes
func writeMessage(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]string{"message": message})
}
