package gitlab_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/configbutler/gitops-reverser/forges/gitlab"
	"github.com/configbutler/gitops-reverser/gitfile"
	simgitlab "github.com/configbutler/gitops-reverser/test/sim/gitlab"
)

func startServer(t *testing.T) *simgitlab.Server {
	t.Helper()
	server := simgitlab.Start()
	t.Cleanup(server.Close)
	server.AddToken(testToken, tokenUser())
	return server
}

func author() forges.Signature {
	return forges.Signature{Name: "Alice Example", Email: "alice@example.com", When: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
}

func put(path, content string) gitfile.Change {
	return gitfile.Change{Path: path, Content: []byte(content)}
}

func request(branch, expected string, changes ...gitfile.Change) forges.CommitRequest {
	return forges.CommitRequest{Branch: branch, ExpectedHead: expected, Message: "test\n", Author: author(), Changes: changes}
}

func head(t *testing.T, f forges.Forge, branch string) string {
	t.Helper()
	h, err := f.Head(context.Background(), branch)
	require.NoError(t, err)
	return h
}

// betweenHeadCheckAndCommit runs once, right after the client's branch
// read answers and before its commit is sent: the window GitLab's API
// leaves open because it has no compare-and-swap on the head.
type betweenHeadCheckAndCommit struct {
	once sync.Once
	run  func()
}

func (b *betweenHeadCheckAndCommit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && resp.StatusCode == http.StatusOK &&
		strings.Contains(req.URL.EscapedPath(), "/repository/branches/") {
		b.once.Do(b.run)
	}
	return resp, err
}

func racingClient(t *testing.T, server *simgitlab.Server, project string, race func()) *gitlab.Client {
	t.Helper()
	client, err := gitlab.New(gitlab.Options{APIURL: server.APIURL(), Project: project, Token: testToken,
		HTTPClient: &http.Client{Transport: &betweenHeadCheckAndCommit{run: race}}})
	require.NoError(t, err)
	return client
}

// A file another writer changed after the expected head is refused by
// GitLab itself (last_commit_id), even when the head check passed.
func TestLastCommitIDRefusalIsAConflict(t *testing.T) {
	server := startServer(t)
	_, err := server.CreateProject("g/last-commit", map[string]string{"shared.yaml": "v: 1\n"})
	require.NoError(t, err)
	var theirs string
	client := racingClient(t, server, "g/last-commit", func() {
		theirs, err = server.Commit("g/last-commit", "main", "external\n", map[string]string{"shared.yaml": "v: external\n"})
		require.NoError(t, err)
	})
	expected := head(t, newClient(t, server, "g/last-commit", testToken), "main")

	_, err = client.Commit(context.Background(), request("main", expected, forgetest.Update("shared.yaml", "v: 1\n", "v: ours\n")))
	require.ErrorIs(t, err, forges.ErrConflict)
	require.ErrorContains(t, err, "The file has changed since you started editing it: shared.yaml")
	content, _ := server.File("g/last-commit", "main", "shared.yaml")
	require.Equal(t, "v: external\n", content, "their change is not overwritten")
	now, _ := server.HeadCommit("g/last-commit", "main")
	require.Equal(t, theirs, now.ID, "nothing was committed")
}

// A writer that slips in between the head check and the commit, touching
// other files, ends up under our commit: their change is kept, and the
// client reports a conflict so the caller re-reads the head.
func TestCommitOnAHeadMovedMidwayIsAConflictThatKeepsTheirChange(t *testing.T) {
	server := startServer(t)
	_, err := server.CreateProject("g/midway", map[string]string{"ours.yaml": "v: 1\n", "theirs.yaml": "v: 1\n"})
	require.NoError(t, err)
	var theirs string
	client := racingClient(t, server, "g/midway", func() {
		theirs, err = server.Commit("g/midway", "main", "external\n", map[string]string{"theirs.yaml": "v: external\n"})
		require.NoError(t, err)
	})
	expected := head(t, newClient(t, server, "g/midway", testToken), "main")

	_, err = client.Commit(context.Background(), request("main", expected, forgetest.Update("ours.yaml", "v: 1\n", "v: 2\n")))
	require.ErrorIs(t, err, forges.ErrConflict)
	var moved *gitlab.MovedHeadError
	require.True(t, errors.As(err, &moved), "%v", err)
	require.Equal(t, []string{theirs}, moved.Parents)
	require.Equal(t, expected, moved.Expected)
	now, _ := server.HeadCommit("g/midway", "main")
	require.Equal(t, moved.Commit, now.ID)
	content, _ := server.File("g/midway", "main", "theirs.yaml")
	require.Equal(t, "v: external\n", content, "their change is kept")
	content, _ = server.File("g/midway", "main", "ours.yaml")
	require.Equal(t, "v: 2\n", content)
}

func TestCreateRacingAnExternalCreateIsAConflict(t *testing.T) {
	server := startServer(t)
	_, err := server.CreateProject("g/create", map[string]string{"a.yaml": "a\n"})
	require.NoError(t, err)
	client := racingClient(t, server, "g/create", func() {
		_, err := server.Commit("g/create", "main", "external\n", map[string]string{"new.yaml": "theirs\n"})
		require.NoError(t, err)
	})
	expected := head(t, newClient(t, server, "g/create", testToken), "main")

	_, err = client.Commit(context.Background(), request("main", expected, put("new.yaml", "ours\n")))
	require.ErrorIs(t, err, forges.ErrConflict)
	require.ErrorContains(t, err, "A file with this name already exists")
	content, _ := server.File("g/create", "main", "new.yaml")
	require.Equal(t, "theirs\n", content)
}

func TestRateLimitedCarriesTheWait(t *testing.T) {
	server := startServer(t)
	_, err := server.CreateProject("g/limited", map[string]string{"a.yaml": "a\n"})
	require.NoError(t, err)
	client := newClient(t, server, "g/limited", testToken)
	_, ok := client.Budget()
	require.False(t, ok, "no budget before any response")
	server.SetRateLimit(3, time.Minute)

	_, err = client.Head(context.Background(), "main")
	require.NoError(t, err)
	budget, ok := client.Budget()
	require.True(t, ok)
	require.Equal(t, 3, budget.Limit)
	require.Equal(t, 2, budget.Remaining)
	require.WithinDuration(t, time.Now().Add(time.Minute), budget.Reset, 2*time.Second)

	for range 2 {
		_, err = client.Head(context.Background(), "main")
		require.NoError(t, err)
	}
	_, err = client.Commit(context.Background(), request("main", "0123456789012345678901234567890123456789", put("b.yaml", "b\n")))
	require.ErrorIs(t, err, forges.ErrRateLimited)
	wait := forges.RetryAfter(err)
	require.Greater(t, wait, 50*time.Second)
	require.LessOrEqual(t, wait, time.Minute)
	budget, _ = client.Budget()
	require.Equal(t, 0, budget.Remaining)
}

// TestRequestsPerCommit pins what a commit costs: the head check and the
// commit itself, however many files it touches and whether or not the
// client read the base before: the changes' base blobs say create, update
// or delete, so no tree is listed.
func TestRequestsPerCommit(t *testing.T) {
	server := startServer(t)
	seed := map[string]string{}
	for i := range 30 {
		seed[fmt.Sprintf("apps/old-%02d.yaml", i)] = "old\n"
	}
	_, err := server.CreateProject("g/cost", seed)
	require.NoError(t, err)
	client := newClient(t, server, "g/cost", testToken)
	base := head(t, client, "main")

	var changes []gitfile.Change
	for i := range 30 {
		changes = append(changes, forgetest.Update(fmt.Sprintf("apps/old-%02d.yaml", i), "old\n", "new\n"),
			put(fmt.Sprintf("apps/new-%02d.yaml", i), "n\n"))
	}
	server.ResetRequests()
	first, err := client.Commit(context.Background(), request("main", base, changes...))
	require.NoError(t, err)
	require.Equal(t, 2, projectRequests(server, "g/cost"), "on a base the client never read: head check and commit, 60 files")

	server.ResetRequests()
	_, err = client.Commit(context.Background(), request("main", first.Commit,
		forgetest.Update("apps/old-00.yaml", "new\n", "newer\n"), forgetest.Delete("apps/new-00.yaml", "n\n"),
		gitfile.Change{Path: "apps/never-there.yaml", Delete: true}))
	require.NoError(t, err)
	require.Equal(t, 2, projectRequests(server, "g/cost"), "on its own commit: head check and commit")
	content, _ := server.File("g/cost", "main", "apps/old-00.yaml")
	require.Equal(t, "newer\n", content)
	_, ok := server.File("g/cost", "main", "apps/new-00.yaml")
	require.False(t, ok, "the delete landed; the delete of a path with no base blob was left out")
}

func TestIdentities(t *testing.T) {
	server := startServer(t)
	_, err := server.CreateProject("g/identities", map[string]string{"a.yaml": "a\n"})
	require.NoError(t, err)
	client := newClient(t, server, "g/identities", testToken)
	before := time.Now().Add(-time.Second)
	res, err := client.Commit(context.Background(), forges.CommitRequest{
		Branch: "main", ExpectedHead: head(t, client, "main"), Message: "identities\n", Author: author(),
		Committer: forges.Signature{Name: "Ignored", Email: "ignored@example.com", When: author().When},
		Changes:   []gitfile.Change{put("b.yaml", "b\n")},
	})
	require.NoError(t, err)
	c, _ := server.HeadCommit("g/identities", "main")
	require.Equal(t, res.Commit, c.ID)
	require.Equal(t, "Alice Example", c.AuthorName)
	require.Equal(t, "alice@example.com", c.AuthorEmail)
	require.Equal(t, tokenUser().Name, c.CommitterName, "the committer is the token's user")
	require.Equal(t, tokenUser().Email, c.CommitterEmail)
	require.True(t, c.AuthorDate.After(before), "the author date is GitLab's clock, not the requested %s", author().When)
	require.Equal(t, "identities\n", c.Message)
	require.Equal(t, server.URL()+"/g/identities/-/commit/"+res.Commit, client.CommitURL(res.Commit))
}

func TestHeadOfMissingAndEmpty(t *testing.T) {
	server := startServer(t)
	_, err := server.CreateProject("g/empty", nil)
	require.NoError(t, err)
	_, err = server.CreateProject("g/full", map[string]string{"a": "a"})
	require.NoError(t, err)

	_, err = newClient(t, server, "g/empty", testToken).Head(context.Background(), "main")
	require.ErrorIs(t, err, forges.ErrEmptyRepository)
	_, err = newClient(t, server, "g/full", testToken).Head(context.Background(), "nope")
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = newClient(t, server, "g/missing", testToken).Head(context.Background(), "main")
	require.ErrorIs(t, err, forges.ErrNotFound)
	require.NoError(t, newClient(t, server, "g/full", testToken).Probe(context.Background()))
	require.ErrorIs(t, newClient(t, server, "g/full", wrongToken).Probe(context.Background()), forges.ErrUnauthorized)
}

func TestTreeFollowsPagesAndTreatsAMissingPrefixAsEmpty(t *testing.T) {
	server := startServer(t)
	seed := map[string]string{"other/x.yaml": "x\n"}
	for i := range 250 {
		seed[fmt.Sprintf("big/f-%03d.yaml", i)] = fmt.Sprintf("n: %d\n", i)
	}
	_, err := server.CreateProject("g/tree", seed)
	require.NoError(t, err)
	client := newClient(t, server, "g/tree", testToken)
	h := head(t, client, "main")

	entries, err := client.Tree(context.Background(), h, "big")
	require.NoError(t, err)
	require.Len(t, entries, 250, "three pages of 100")
	require.Equal(t, forges.ModeRegular, entries[0].Mode)
	content, err := client.Blob(context.Background(), entries[7].BlobID)
	require.NoError(t, err)
	require.Equal(t, "n: 7\n", string(content))

	entries, err = client.Tree(context.Background(), h, "nowhere")
	require.NoError(t, err)
	require.Empty(t, entries)
	_, err = client.Tree(context.Background(), "0123456789012345678901234567890123456789", "big")
	require.ErrorIs(t, err, forges.ErrNotFound)
}

func TestReadOnlyTokenIsForbidden(t *testing.T) {
	server := startServer(t)
	server.AddToken("reader", simgitlab.User{Username: "reader", Name: "R", Email: "r@example.com", ReadOnly: true})
	_, err := server.CreateProject("g/ro", map[string]string{"a": "a"})
	require.NoError(t, err)
	client := newClient(t, server, "g/ro", "reader")
	_, err = client.Commit(context.Background(), request("main", head(t, client, "main"), put("b", "b")))
	require.ErrorIs(t, err, forges.ErrForbidden)
}

type signer struct{}

func (signer) Sign([]byte) ([]byte, error) { return []byte("sig"), nil }

func TestNewBranchThatExistsIsAConflictAndSignersAreRefused(t *testing.T) {
	server := startServer(t)
	_, err := server.CreateProject("g/branches", map[string]string{"a.yaml": "a\n"})
	require.NoError(t, err)
	client := newClient(t, server, "g/branches", testToken)
	base := head(t, client, "main")

	_, err = client.Commit(context.Background(), forges.CommitRequest{Branch: "main", BaseHead: base, Message: "x\n",
		Author: author(), Changes: []gitfile.Change{put("b.yaml", "b\n")}})
	require.ErrorIs(t, err, forges.ErrConflict, "start_sha onto an existing branch is refused by GitLab")
	require.ErrorContains(t, err, "A branch called 'main' already exists")
	require.Equal(t, base, head(t, client, "main"))

	req := request("main", base, put("b.yaml", "b\n"))
	req.Signer = signer{}
	_, err = client.Commit(context.Background(), req)
	require.ErrorIs(t, err, forges.ErrSigningUnsupported)
	require.Equal(t, base, head(t, client, "main"))
}
