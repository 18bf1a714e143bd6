package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// TestConcurrentCommitsOnOneHead races two clients committing different
// files on the same expected head: exactly one wins, the other gets a
// conflict, and the loser's retry on the new head keeps both changes.
// Several rounds vary where the race falls (ChangeFiles against ChangeFiles,
// or against the branch update).
func TestConcurrentCommitsOnOneHead(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "race", map[string]string{"seed.yaml": "seed: 1\n"})
	writers := []*Client{newClient(t, repo, server.Token()), newClient(t, repo, server.Token())}
	for round := range 3 {
		expected := sdkHead(t, repo, "main")
		results := make([]error, len(writers))
		commits := make([]string, len(writers))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, writer := range writers {
			wg.Go(func() {
				<-start
				res, err := writer.Commit(testContext(t), commitRequest(expected, fmt.Sprintf("writer %d round %d\n", i, round),
					put(fmt.Sprintf("writer-%d/round-%d.yaml", i, round), fmt.Sprintf("round: %d\n", round))))
				results[i], commits[i] = err, res.Commit
			})
		}
		close(start)
		wg.Wait()

		winner, loser := 0, 1
		if results[0] != nil {
			winner, loser = 1, 0
		}
		require.NoError(t, results[winner], "round %d: one writer wins", round)
		require.ErrorIs(t, results[loser], forges.ErrConflict, "round %d: the other is refused", round)
		t.Logf("round %d: the loser was refused with: %v", round, results[loser])
		require.Equal(t, commits[winner], sdkHead(t, repo, "main"))

		retried, err := writers[loser].Commit(testContext(t), commitRequest(commits[winner], "retry\n",
			put(fmt.Sprintf("writer-%d/round-%d.yaml", loser, round), fmt.Sprintf("round: %d\n", round))))
		require.NoError(t, err, "round %d: the loser's retry on the new head lands", round)
		require.Equal(t, []string{commits[winner]}, describeCommit(t, repo, retried.Commit).Parents)
		for i := range writers {
			content, ok := fileAt(t, repo, "main", fmt.Sprintf("writer-%d/round-%d.yaml", i, round))
			require.True(t, ok, "round %d: writer %d's change is present", round, i)
			require.Equal(t, fmt.Sprintf("round: %d\n", round), content)
		}
		require.Equal(t, []string{"main"}, branches(t, repo), "round %d: no scratch branch is left", round)
	}
}

// TestScratchBranchIsAlwaysDeleted lists the branches after a commit that
// landed and after each way a commit is refused.
func TestScratchBranchIsAlwaysDeleted(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "scratch", map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n"})
	client := newClient(t, repo, server.Token())
	ctx := testContext(t)

	first := sdkHead(t, repo, "main")
	_, err := client.Commit(ctx, commitRequest(first, "lands\n", forgetest.Update("a.yaml", "a: 1\n", "a: 2\n")))
	require.NoError(t, err)
	require.Equal(t, []string{"main"}, branches(t, repo), "after a commit that landed")

	stale := first
	// The branch moved, but not the file: Gitea makes the commit on the
	// scratch branch, its parent is not the expected head, and it is
	// thrown away.
	_, err = client.Commit(ctx, commitRequest(stale, "other file, stale head\n", put("c.yaml", "c: 1\n")))
	require.ErrorIs(t, err, forges.ErrConflict)
	require.Equal(t, []string{"main"}, branches(t, repo), "after a conflict on the head")

	// The file itself moved: ChangeFiles refuses with 422 "sha does not
	// match" before making any commit.
	_, err = client.Commit(ctx, commitRequest(stale, "same file, stale head\n", forgetest.Update("a.yaml", "a: 1\n", "a: 3\n")))
	require.ErrorIs(t, err, forges.ErrConflict)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr, "the Gitea answer stays wrapped")
	require.Equal(t, http.StatusUnprocessableEntity, apiErr.StatusCode)
	require.Contains(t, apiErr.Message, "sha does not match")
	require.Equal(t, []string{"main"}, branches(t, repo), "after a conflict on a file")
}

// TestBranchMovedBetweenCommitAndUpdate moves the branch after Gitea made
// the commit on the scratch branch and before the branch update: the
// update's old_commit_id refuses it with 422 "branch commit does not
// match", and the external commit stays the head.
func TestBranchMovedBetweenCommitAndUpdate(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "interleave", map[string]string{"ours.yaml": "v: 1\n", "theirs.yaml": "v: 1\n"})
	expected := sdkHead(t, repo, "main")
	var external string
	client := newInterceptedClient(t, repo, http.MethodPut, func() {
		external = externalCommit(t, repo, "main", map[string]string{"theirs.yaml": "v: external\n"})
	})

	_, err := client.Commit(testContext(t), commitRequest(expected, "ours\n", forgetest.Update("ours.yaml", "v: 1\n", "v: 2\n")))
	require.ErrorIs(t, err, forges.ErrConflict)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnprocessableEntity, apiErr.StatusCode)
	require.Contains(t, apiErr.Message, "branch commit does not match")
	require.Equal(t, external, sdkHead(t, repo, "main"), "the external commit is still the head")
	ours, _ := fileAt(t, repo, "main", "ours.yaml")
	require.Equal(t, "v: 1\n", ours)
	require.Equal(t, []string{"main"}, branches(t, repo))
}

// newInterceptedClient is newClient that runs run once, before its first
// request with method.
func newInterceptedClient(t *testing.T, repo, method string, run func()) *Client {
	t.Helper()
	client, err := New(Options{BaseURL: server.URL(), Owner: server.AdminUser(), Repo: repo, Token: server.Token(),
		HTTPClient: &http.Client{Transport: &beforeRequest{next: http.DefaultTransport, method: method, run: run}}})
	require.NoError(t, err)
	return client
}

// beforeRequest runs run once, before the first request with method.
type beforeRequest struct {
	next   http.RoundTripper
	method string
	once   sync.Once
	run    func()
}

func (b *beforeRequest) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == b.method {
		b.once.Do(b.run)
	}
	return b.next.RoundTrip(req)
}

// TestCommitOnDeletedBranchIsConflict: the branch the caller expects at a
// head no longer exists.
func TestCommitOnDeletedBranchIsConflict(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "deleted-branch", map[string]string{"a.yaml": "a: 1\n"})
	client := newClient(t, repo, server.Token())
	ctx := testContext(t)
	_, created := commitNewBranch(t, ctx, client, repo, "feature", "feature\n", put("f.yaml", "f: 1\n"))
	deleted, resp, err := server.Client().DeleteRepoBranch(server.AdminUser(), repo, "feature")
	require.NoError(t, err)
	require.True(t, deleted, "HTTP %d", resp.StatusCode)

	onDeleted := commitRequest(created.Commit, "on a deleted branch\n", forgetest.Update("f.yaml", "f: 1\n", "f: 2\n"))
	onDeleted.Branch = "feature"
	_, err = client.Commit(ctx, onDeleted)
	require.ErrorIs(t, err, forges.ErrConflict)
	require.Equal(t, []string{"main"}, branches(t, repo))
}

// TestNewBranchThatAppearedIsConflict: a new branch that another writer
// created meanwhile is refused, not committed on top of.
func TestNewBranchThatAppearedIsConflict(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "appeared", map[string]string{"a.yaml": "a: 1\n"})
	client := newClient(t, repo, server.Token())
	ctx := testContext(t)
	request, first := commitNewBranch(t, ctx, client, repo, "mirror", "first\n", put("m.yaml", "m: 1\n"))

	request.Changes = []gitfile.Change{put("m.yaml", "m: 2\n")}
	_, err := client.Commit(ctx, request)
	require.ErrorIs(t, err, forges.ErrConflict)
	require.Equal(t, first.Commit, sdkHead(t, repo, "mirror"))
	require.Equal(t, []string{"main", "mirror"}, branches(t, repo))
}

// TestFirstCommitRaceInEmptyRepository: once a first commit exists, a
// second "first commit" is a conflict rather than a commit on top of it.
func TestFirstCommitRaceInEmptyRepository(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "first-race", nil)
	client := newClient(t, repo, server.Token())
	ctx := testContext(t)
	first, err := client.Commit(ctx, commitRequest("", "first\n", put("a.yaml", "a: 1\n")))
	require.NoError(t, err)
	_, err = client.Commit(ctx, commitRequest("", "also first\n", put("b.yaml", "b: 1\n")))
	require.ErrorIs(t, err, forges.ErrConflict)
	require.Equal(t, first.Commit, sdkHead(t, repo, "main"))

	// A root commit on another branch of a repository with commits is
	// something Gitea cannot make: a plain error saying so, not a conflict.
	orphan := commitRequest("", "orphan\n", put("o.yaml", "o: 1\n"))
	orphan.Branch = "orphan"
	_, err = client.Commit(ctx, orphan)
	require.ErrorContains(t, err, "cannot start an orphan branch")
	require.False(t, errors.Is(err, forges.ErrConflict))
}

// TestRequestsAndLatencyPerCommit counts the API requests of commits on
// an existing head, of a new branch and of a first commit, and reports
// the latency of the first kind. The count does not depend on how many
// files a commit touches.
func TestRequestsAndLatencyPerCommit(t *testing.T) {
	repo := createRepo(t, "requests", map[string]string{"seed/a.yaml": "a: 1\n", "seed/b.yaml": "b: 1\n"})
	client, counter := newCountingClient(t, repo)
	ctx := testContext(t)
	head := sdkHead(t, repo, "main")
	var latencies []time.Duration
	for i := range 7 {
		changes := []gitfile.Change{forgetest.Update("seed/a.yaml", fmt.Sprintf("a: %d\n", i+1), fmt.Sprintf("a: %d\n", i+2))}
		for j := range 4 {
			changes = append(changes, put(fmt.Sprintf("apps/app-%d/file-%d.yaml", j, i), "x: 1\n"))
		}
		started := time.Now()
		res, err := client.Commit(ctx, commitRequest(head, fmt.Sprintf("commit %d\n", i), changes...))
		latencies = append(latencies, time.Since(started))
		require.NoError(t, err)
		head = res.Commit
		repoAPI := "/api/v1/repos/" + server.AdminUser() + "/" + repo
		requests := counter.take()
		requireNoTreeListing(t, requests)
		requireRequests(t, requests, "a commit of 5 files on a head is 3 requests: the base blobs say create or update",
			"POST "+repoAPI+"/contents",
			"PUT "+repoAPI+"/branches/main",
			"DELETE "+repoAPI+"/branches/"+scratchBranchPrefix)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	t.Logf("strict commit of 5 files: 3 requests, median %s (min %s, max %s); median per request: %v",
		latencies[len(latencies)/2], latencies[0], latencies[len(latencies)-1], counter.medianByMethod())

	_, err := client.Commit(ctx, forges.CommitRequest{Branch: "new", BaseHead: head, Message: "new\n",
		Changes: []gitfile.Change{put("n.yaml", "n: 1\n")}})
	require.NoError(t, err)
	require.Len(t, counter.take(), 3, "a new branch: scratch branch, commit, scratch deletion")

	empty := createRepo(t, "requests-empty", nil)
	emptyClient, emptyCounter := newCountingClient(t, empty)
	_, err = emptyClient.Commit(ctx, commitRequest("", "first\n", put("a.yaml", "a: 1\n")))
	require.NoError(t, err)
	require.Len(t, emptyCounter.take(), 1, "a first commit is one request")
}

// requireNoTreeListing checks that no request of a commit lists a tree:
// the changes' base blobs tell the forge what each path holds.
func requireNoTreeListing(t *testing.T, got []string) {
	t.Helper()
	for _, request := range got {
		require.NotContains(t, request, "/git/trees/", "a commit lists no tree: %v", got)
	}
}

// requireRequests checks that got are exactly the requests whose method
// and path begin as want say, in order.
func requireRequests(t *testing.T, got []string, why string, want ...string) {
	t.Helper()
	require.Len(t, got, len(want), "%s: %v", why, got)
	for i := range want {
		require.True(t, strings.HasPrefix(got[i], want[i]), "%s: request %d is %q, want %q…", why, i, got[i], want[i])
	}
}

// TestCommitResultBlobsMatchTheForge: the blob ids computed locally are
// the ones Gitea stored.
func TestCommitResultBlobsMatchTheForge(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "blobs", map[string]string{"a.yaml": "a: 1\n"})
	client := newClient(t, repo, server.Token())
	ctx := context.Background()
	res, err := client.Commit(ctx, commitRequest(sdkHead(t, repo, "main"), "blobs\n",
		forgetest.Update("a.yaml", "a: 1\n", "a: 2\n"), put("dir/empty.yaml", ""), put("dir/binary", "\x00\xff\x10"), del("missing.yaml")))
	require.NoError(t, err)
	entries, err := client.Tree(ctx, res.Commit, "")
	require.NoError(t, err)
	stored := map[string]string{}
	for _, entry := range entries {
		stored[entry.Path] = entry.BlobID
	}
	require.Equal(t, stored, res.Blobs)
	for path, id := range res.Blobs {
		content, err := client.Blob(ctx, id)
		require.NoError(t, err)
		want, _ := fileAt(t, repo, "main", path)
		require.Equal(t, want, string(content))
	}
}

// TestCommitWithoutChanges: nothing to change (or only deletions of
// absent paths) is still one commit on the expected head, as with the git
// forge; Gitea accepts an empty file list.
func TestCommitWithoutChanges(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "no-changes", map[string]string{"a.yaml": "a: 1\n"})
	client, counter := newCountingClient(t, repo)
	ctx := testContext(t)
	head := sdkHead(t, repo, "main")

	res, err := client.Commit(ctx, commitRequest(head, "nothing\n"))
	require.NoError(t, err)
	require.Len(t, counter.take(), 3, "no base tree to read")
	require.Equal(t, []string{head}, describeCommit(t, repo, res.Commit).Parents)
	require.Empty(t, res.Blobs)

	res, err = client.Commit(ctx, commitRequest(res.Commit, "delete what is gone\n", del("never-there.yaml")))
	require.NoError(t, err)
	require.Equal(t, res.Commit, sdkHead(t, repo, "main"))
	content, ok := fileAt(t, repo, "main", "a.yaml")
	require.True(t, ok)
	require.Equal(t, "a: 1\n", content)
}

// refusingPusher is a Pusher the server will not take pushes from.
type refusingPusher struct{ calls int }

func (p *refusingPusher) Commit(context.Context, forges.CommitRequest) (forges.CommitResult, error) {
	p.calls++
	return forges.CommitResult{}, forges.Errorf(forges.KindForbidden, "push", errors.New("HTTP git is disabled"))
}

func (p *refusingPusher) CommitChain(context.Context, []forges.CommitRequest) ([]forges.CommitResult, error) {
	p.calls++
	return nil, forges.Errorf(forges.KindForbidden, "push", errors.New("HTTP git is disabled"))
}

func (p *refusingPusher) ChainLimit() int { return 500 }

func (p *refusingPusher) Head(context.Context, string) (string, error) {
	p.calls++
	return "", forges.Errorf(forges.KindForbidden, "ls-remote", errors.New("HTTP git is disabled"))
}

func (p *refusingPusher) Tree(context.Context, string, string) ([]forges.TreeEntry, error) {
	p.calls++
	return nil, forges.Errorf(forges.KindForbidden, "fetch", errors.New("HTTP git is disabled"))
}

func (p *refusingPusher) Blob(context.Context, string) ([]byte, error) {
	return nil, forges.Errorf(forges.KindNotFound, "read blob", errors.New("fetched nothing"))
}

func TestAServerThatRefusesPushesGetsTheCommitsThroughChangeFilesForAnHour(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := createRepo(t, "refused-push", map[string]string{"README.md": "seed\n"})
	pusher := &refusingPusher{}
	now := time.Now()
	client, err := New(Options{BaseURL: server.URL(), Owner: server.AdminUser(), Repo: repo, Token: server.Token(), Pusher: pusher,
		Now: func() time.Time { return now }})
	require.NoError(t, err)
	head, err := client.Head(ctx, "main")
	require.NoError(t, err)
	author := forges.Signature{Name: "Operator", Email: "op@example.com", When: time.Now()}
	for i := range 2 {
		change := gitfile.Change{Path: "a.yaml", Content: fmt.Appendf(nil, "v: %d\n", i)}
		if i > 0 {
			change.BaseBlob = gitfile.BlobID(fmt.Appendf(nil, "v: %d\n", i-1), head)
		}
		res, err := client.Commit(ctx, forges.CommitRequest{Branch: "main", ExpectedHead: head, Message: "edit",
			Author: author, Committer: author, Changes: []gitfile.Change{change}})
		require.NoError(t, err)
		head = res.Commit
	}
	content, ok := fileAt(t, repo, "main", "a.yaml")
	require.True(t, ok)
	require.Equal(t, "v: 1\n", content)
	require.Equal(t, 1, pusher.calls, "after the refusal every read and commit goes through the API")

	now = now.Add(pushRetryAfter)
	_, err = client.Head(ctx, "main")
	require.NoError(t, err)
	require.Equal(t, 2, pusher.calls, "an hour later the Git protocol is tried again")
}
