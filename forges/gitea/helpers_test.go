package gitea

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// uniqueName is a repository or user name unique to this run of the test,
// as -count reruns tests against the same server.
func uniqueName(t *testing.T, name string) string {
	base := strings.NewReplacer("/", "-", " ", "-", "_", "-").Replace(strings.ToLower(t.Name() + "-" + name))
	if len(base) > 60 {
		base = base[len(base)-60:]
	}
	return strings.Trim(base, "-.") + "-" + strings.ToLower(rand.Text()[:6])
}

// uniqueUser is a user name unique to this run: Gitea allows 40
// characters, fewer than test names take.
func uniqueUser(role string) string {
	return role + "-" + strings.ToLower(rand.Text()[:8])
}

// createRepo makes a public repository of the administrator with default
// branch main: empty when seed is nil, otherwise with one commit holding
// seed, made with the SDK.
func createRepo(t *testing.T, name string, seed map[string]string) string {
	t.Helper()
	created, err := server.CreateRepo(uniqueName(t, name), false)
	require.NoError(t, err)
	if seed != nil {
		seedRepo(t, created.Name, seed)
	}
	return created.Name
}

func seedRepo(t *testing.T, repo string, files map[string]string) {
	t.Helper()
	operations := make([]*gitea.ChangeFileOperation, 0, len(files))
	for path, content := range files {
		operations = append(operations, &gitea.ChangeFileOperation{Operation: "create", Path: path, Content: encode(content)})
	}
	_, resp, err := server.Client().ChangeFiles(server.AdminUser(), repo, gitea.ChangeFilesOptions{
		Branch: "main", Message: "seed", Files: operations,
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}

func encode(content string) string { return base64.StdEncoding.EncodeToString([]byte(content)) }

// newClient is a client for the administrator's repo with token.
func newClient(t *testing.T, repo, token string) *Client {
	t.Helper()
	client, err := New(Options{BaseURL: server.URL(), Owner: server.AdminUser(), Repo: repo, Token: token})
	require.NoError(t, err)
	return client
}

// newPushingClient is newClient that commits through a git push with the
// same token, as the operator builds it.
func newPushingClient(t *testing.T, repo, token string) *Client {
	t.Helper()
	opts := Options{BaseURL: server.URL(), Owner: server.AdminUser(), Repo: repo, Token: token}
	cloneURL, err := CloneURL(opts)
	require.NoError(t, err)
	opts.Pusher, err = gogit.New(gogit.Options{URL: cloneURL, Auth: gogit.BasicAuth{Username: "git", Password: token}})
	require.NoError(t, err)
	client, err := New(opts)
	require.NoError(t, err)
	return client
}

// newCountingClient is newClient whose requests are counted.
func newCountingClient(t *testing.T, repo string) (*Client, *requestCounter) {
	t.Helper()
	counter := &requestCounter{next: http.DefaultTransport}
	client, err := New(Options{BaseURL: server.URL(), Owner: server.AdminUser(), Repo: repo, Token: server.Token(),
		HTTPClient: &http.Client{Transport: counter, Timeout: time.Minute}})
	require.NoError(t, err)
	return client, counter
}

// requestCounter is an http.RoundTripper that records the method and
// path of every request it passes on, and the time by method.
type requestCounter struct {
	next     http.RoundTripper
	mu       sync.Mutex
	requests []string
	byMethod map[string][]time.Duration
}

func (r *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	started := time.Now()
	resp, err := r.next.RoundTrip(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req.Method+" "+req.URL.Path)
	if r.byMethod == nil {
		r.byMethod = map[string][]time.Duration{}
	}
	r.byMethod[req.Method] = append(r.byMethod[req.Method], time.Since(started))
	return resp, err
}

// medianByMethod is the median time of the requests of each method.
func (r *requestCounter) medianByMethod() map[string]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	medians := map[string]time.Duration{}
	for method, durations := range r.byMethod {
		sorted := slices.Clone(durations)
		slices.Sort(sorted)
		medians[method] = sorted[len(sorted)/2]
	}
	return medians
}

// take returns the requests recorded since the last take.
func (r *requestCounter) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	taken := r.requests
	r.requests = nil
	return taken
}

// sdkHead is the commit branch points at, read with the SDK.
func sdkHead(t *testing.T, repo, branch string) string {
	t.Helper()
	found, resp, err := server.Client().GetRepoBranch(server.AdminUser(), repo, branch)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return found.Commit.ID
}

// fileAt reads path at the head of branch with the SDK.
func fileAt(t *testing.T, repo, branch, path string) (string, bool) {
	t.Helper()
	content, resp, err := server.Client().GetFile(server.AdminUser(), repo, branch, path)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return "", false
	}
	require.NoError(t, err)
	return string(content), true
}

// branches lists the repository's branch names with the SDK.
func branches(t *testing.T, repo string) []string {
	t.Helper()
	found, resp, err := server.Client().ListRepoBranches(server.AdminUser(), repo,
		gitea.ListRepoBranchesOptions{ListOptions: gitea.ListOptions{PageSize: 50}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	names := make([]string, 0, len(found))
	for _, branch := range found {
		names = append(names, branch.Name)
	}
	sort.Strings(names)
	return names
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func put(path, content string) gitfile.Change {
	return gitfile.Change{Path: path, Content: []byte(content)}
}

func del(path string) gitfile.Change { return gitfile.Change{Path: path, Delete: true} }

// commitNewBranch commits change on a new branch from main's current head
// and returns the request and its result.
func commitNewBranch(t *testing.T, ctx context.Context, client *Client, repo, branch, message string, change gitfile.Change) (forges.CommitRequest, forges.CommitResult) {
	t.Helper()
	request := forges.CommitRequest{Branch: branch, BaseHead: sdkHead(t, repo, "main"), Message: message, Changes: []gitfile.Change{change}}
	result, err := client.Commit(ctx, request)
	require.NoError(t, err)
	return request, result
}

// commitRequest is a commit on expectedHead of main by a fixed author and
// committer in different zones, so a re-stamped identity shows.
func commitRequest(expectedHead, message string, changes ...gitfile.Change) forges.CommitRequest {
	return forges.CommitRequest{
		Branch: "main", ExpectedHead: expectedHead, Message: message,
		Author: forges.Signature{Name: "Jane Operator", Email: "jane@example.com",
			When: time.Date(2024, 3, 1, 10, 30, 0, 0, time.FixedZone("CET", 3600))},
		Committer: forges.Signature{Name: "GitOps Reverser", Email: "bot@example.com",
			When: time.Date(2024, 3, 1, 9, 45, 12, 0, time.UTC)},
		Changes: changes,
	}
}
