package gitea

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

const pullHead = "gitops-reverser/mirror"

// startPullHead commits change on a new head branch from main through
// client and returns the head commit.
func startPullHead(t *testing.T, ctx context.Context, client *Client, repo string, change gitfile.Change) string {
	t.Helper()
	result, err := client.Commit(ctx, forges.CommitRequest{Branch: pullHead, BaseHead: sdkHead(t, repo, "main"),
		Message: "mirror\n", Changes: []gitfile.Change{change}})
	require.NoError(t, err)
	return result.Commit
}

// mergeOnGitea merges pull request number as a reviewer would, through the
// SDK. Gitea checks a new pull request's mergeability in the background
// and answers 405 "Please try again later" until it has; the merge is
// asked again on a ticker until Gitea takes it.
func mergeOnGitea(t *testing.T, ctx context.Context, repo string, number int64) {
	t.Helper()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		merged, resp, err := server.Client().MergePullRequest(server.AdminUser(), repo, number,
			gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge})
		if err == nil && merged {
			return
		}
		require.True(t, resp != nil && resp.StatusCode == http.StatusMethodNotAllowed &&
			strings.Contains(fmt.Sprint(err), "try again later"), "merging #%d: %v", number, err)
		select {
		case <-ctx.Done():
			t.Fatalf("Gitea never found pull request #%d mergeable", number)
		case <-ticker.C:
		}
	}
}

// TestPullRequestLifecycleOnGitea: the first change opens the pull
// request, an open of the same pair answers 409 and finds it instead of
// making a second, the body is edited, Gitea merges it, and then it reads
// merged and is no longer found; the next change's pull request from the
// same head is a new one, and found despite the merged one before it.
func TestPullRequestLifecycleOnGitea(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	repo := createRepo(t, "pr", map[string]string{"README.md": "hello\n"})
	client := newPushingClient(t, repo, server.Token())
	head := startPullHead(t, ctx, client, repo, put("apps/cm.yaml", "a: 1\n"))

	_, err := client.FindPullRequest(ctx, pullHead, "main")
	require.ErrorIs(t, err, forges.ErrNotFound)

	opened, created, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror", Body: "1 created"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, forges.PullRequestOpen, opened.State)
	require.Equal(t, head, opened.HeadCommit)
	require.Equal(t, client.PullRequestURL(opened.Number), opened.URL)

	found, err := client.FindPullRequest(ctx, pullHead, "main")
	require.NoError(t, err)
	require.Equal(t, opened, found)
	again, created, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Other"})
	require.NoError(t, err)
	require.False(t, created, "409: the open pull request is returned, not duplicated")
	require.Equal(t, opened.Number, again.Number)
	require.Equal(t, "Mirror", again.Title, "and left as it was")

	edited, err := client.EditPullRequest(ctx, opened.Number, forges.PullRequestOptions{Title: "Mirror", Body: "2 created"})
	require.NoError(t, err)
	require.Equal(t, "2 created", edited.Body)

	mergeOnGitea(t, ctx, repo, opened.Number)
	merged, err := client.PullRequest(ctx, opened.Number)
	require.NoError(t, err)
	require.Equal(t, forges.PullRequestMerged, merged.State)
	content, ok := fileAt(t, repo, "main", "apps/cm.yaml")
	require.True(t, ok)
	require.Equal(t, "a: 1\n", content)
	_, err = client.FindPullRequest(ctx, pullHead, "main")
	require.ErrorIs(t, err, forges.ErrNotFound, "a merged pull request is not the open one")

	// The next change on the same head branch, now behind nothing: a new
	// pull request, which the find sees past the merged one.
	next, err := client.Commit(ctx, forges.CommitRequest{Branch: pullHead, ExpectedHead: sdkHead(t, repo, pullHead),
		Message: "mirror\n", Changes: []gitfile.Change{put("apps/cm.yaml", "a: 2\n")}})
	require.NoError(t, err)
	second, created, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, opened.Number, second.Number)
	found, err = client.FindPullRequest(ctx, pullHead, "main")
	require.NoError(t, err)
	require.Equal(t, second.Number, found.Number)
	require.Equal(t, next.Commit, found.HeadCommit)
}

func TestAClosedPullRequestReadsClosedOnGitea(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	repo := createRepo(t, "closed", map[string]string{"README.md": "hello\n"})
	client := newClient(t, repo, server.Token())
	startPullHead(t, ctx, client, repo, put("a.yaml", "a: 1\n"))
	opened, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)

	closedState := gitea.StateClosed
	_, _, err = server.Client().EditPullRequest(server.AdminUser(), repo, opened.Number, gitea.EditPullRequestOption{State: &closedState})
	require.NoError(t, err)
	closed, err := client.PullRequest(ctx, opened.Number)
	require.NoError(t, err)
	require.Equal(t, forges.PullRequestClosed, closed.State)
	_, err = client.FindPullRequest(ctx, pullHead, "main")
	require.ErrorIs(t, err, forges.ErrNotFound)
	require.ErrorIs(t, client.MergeBaseIntoHead(ctx, opened.Number, closed.HeadCommit), forges.ErrConflict)

	_, _, err = client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: "no-such-branch", Base: "main", Title: "x"})
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = client.PullRequest(ctx, 4242)
	require.ErrorIs(t, err, forges.ErrNotFound)
}

// TestMergeBaseIntoHeadOnGitea: nothing new on the base is a no-op; a
// stale expected head is refused without writing; a base that moved
// elsewhere is merged in (two requests: the read and the update); a base
// that changed the same file is ErrMergeConflict.
func TestMergeBaseIntoHeadOnGitea(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	repo := createRepo(t, "update", map[string]string{"README.md": "hello\n"})
	client, counter := newCountingClient(t, repo)
	head := startPullHead(t, ctx, client, repo, put("apps/cm.yaml", "a: 1\n"))
	opened, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)

	require.NoError(t, client.MergeBaseIntoHead(ctx, opened.Number, head), "nothing new on the base: nothing to do")
	require.Equal(t, head, sdkHead(t, repo, pullHead))

	externalCommit(t, repo, "main", map[string]string{"docs/other.md": "someone else\n"})
	require.ErrorIs(t, client.MergeBaseIntoHead(ctx, opened.Number, sdkHead(t, repo, "main")), forges.ErrConflict)
	require.Equal(t, head, sdkHead(t, repo, pullHead), "a refused update changes nothing")

	counter.take()
	require.NoError(t, client.MergeBaseIntoHead(ctx, opened.Number, head))
	number := fmt.Sprint(opened.Number)
	require.Equal(t, []string{"GET /api/v1/repos/" + server.AdminUser() + "/" + repo + "/pulls/" + number,
		"POST /api/v1/repos/" + server.AdminUser() + "/" + repo + "/pulls/" + number + "/update"}, counter.take())
	updated := sdkHead(t, repo, pullHead)
	require.NotEqual(t, head, updated)
	content, ok := fileAt(t, repo, pullHead, "docs/other.md")
	require.True(t, ok, "the base's commit is in the head")
	require.Equal(t, "someone else\n", content)
	content, _ = fileAt(t, repo, pullHead, "apps/cm.yaml")
	require.Equal(t, "a: 1\n", content, "and the head's own change is kept")

	externalCommit(t, repo, "main", map[string]string{"apps/cm.yaml": "a: human\n"})
	_, err = client.Commit(ctx, forges.CommitRequest{Branch: pullHead, ExpectedHead: updated, Message: "mirror\n",
		Changes: []gitfile.Change{{Path: "apps/cm.yaml", Content: []byte("a: 2\n"), BaseBlob: blobAt(t, ctx, client, updated, "apps/cm.yaml")}}})
	require.NoError(t, err)
	current := sdkHead(t, repo, pullHead)
	require.ErrorIs(t, client.MergeBaseIntoHead(ctx, opened.Number, current), forges.ErrMergeConflict)
	require.Equal(t, current, sdkHead(t, repo, pullHead), "a conflicting update changes nothing")
}

// blobAt is the blob path holds at commit, read through the client.
func blobAt(t *testing.T, ctx context.Context, client *Client, commit, path string) string {
	t.Helper()
	entries, err := client.Tree(ctx, commit, "")
	require.NoError(t, err)
	for _, entry := range entries {
		if entry.Path == path {
			return entry.BlobID
		}
	}
	t.Fatalf("%s has no %s", commit, path)
	return ""
}

// TestAPullRequestUpdateOnGiteaCostsOneRequest: editing the body is one
// PATCH, and ten updates leave one pull request. The commits go through a
// git push, as the operator makes them; the pull request through the API,
// counted.
func TestAPullRequestUpdateOnGiteaCostsOneRequest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	repo := createRepo(t, "budget", map[string]string{"README.md": "hello\n"})
	pusher := newPushingClient(t, repo, server.Token())
	client, counter := newCountingClient(t, repo)
	head := startPullHead(t, ctx, pusher, repo, put("apps/cm-0.yaml", "n: 0\n"))
	opened, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)
	for i := 1; i <= 10; i++ {
		result, err := pusher.Commit(ctx, forges.CommitRequest{Branch: pullHead, ExpectedHead: head, Message: "mirror\n",
			Changes: []gitfile.Change{put(fmt.Sprintf("apps/cm-%d.yaml", i), "n: 1\n")}})
		require.NoError(t, err)
		head = result.Commit
		counter.take()
		_, err = client.EditPullRequest(ctx, opened.Number, forges.PullRequestOptions{Title: "Mirror", Body: fmt.Sprintf("%d created", i+1)})
		require.NoError(t, err)
		require.Equal(t, []string{"PATCH /api/v1/repos/" + server.AdminUser() + "/" + repo + "/pulls/" + fmt.Sprint(opened.Number)}, counter.take())
	}
	pulls, _, err := server.Client().ListRepoPullRequests(server.AdminUser(), repo, gitea.ListPullRequestsOptions{State: gitea.StateAll})
	require.NoError(t, err)
	require.Len(t, pulls, 1, "ten updates, one pull request")
	require.Equal(t, head, pulls[0].Head.Sha)
}
