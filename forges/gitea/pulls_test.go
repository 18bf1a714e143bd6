package gitea

import (
	"context"
	"fmt"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/forgetest"
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

// TestPullRequestContract runs the shared pull request contract against
// the real Gitea, the commits pushed over git as the operator makes them.
func TestPullRequestContract(t *testing.T) {
	t.Parallel()
	forgetest.RunPullRequests(t, giteaFixture{push: true})
}

// NewPullRepo is NewRepo with a reviewer on Gitea: the SDK as the
// administrator merges (POST pulls/{index}/merge) and closes (PATCH state
// closed).
func (f giteaFixture) NewPullRepo(t *testing.T, name string, seed map[string]string) forgetest.PullRepo {
	repo := createRepo(t, name, seed)
	return forgetest.PullRepo{
		Repo: f.repoOn(t, repo),
		Merge: func(t *testing.T, number int64) {
			require.NoError(t, server.MergePullRequest(testContext(t), server.AdminUser(), repo, number))
		},
		Close: func(t *testing.T, number int64) {
			closed := gitea.StateClosed
			_, _, err := server.Client().EditPullRequest(server.AdminUser(), repo, number, gitea.EditPullRequestOption{State: &closed})
			require.NoError(t, err)
		},
	}
}

// TestMergeBaseIntoHeadOnGiteaIsTwoRequests: the read that checks the
// head and the update.
func TestMergeBaseIntoHeadOnGiteaIsTwoRequests(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	repo := createRepo(t, "update", map[string]string{"README.md": "hello\n"})
	client, counter := newCountingClient(t, repo)
	head := startPullHead(t, ctx, newPushingClient(t, repo, server.Token()), repo, put("apps/cm.yaml", "a: 1\n"))
	opened, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)
	externalCommit(t, repo, "main", map[string]string{"docs/other.md": "someone else\n"})

	counter.take()
	require.NoError(t, client.MergeBaseIntoHead(ctx, opened.Number, head))
	pull := "/api/v1/repos/" + server.AdminUser() + "/" + repo + "/pulls/" + fmt.Sprint(opened.Number)
	require.Equal(t, []string{"GET " + pull, "POST " + pull + "/update"}, counter.take())
	require.NotEqual(t, head, sdkHead(t, repo, pullHead))
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

// TestAMergeParentCommitOnGitea: through a push the merge commit is built
// by the git forge and costs no API request; on the API path (ChangeFiles
// makes commits of one parent) it is refused before any request.
func TestAMergeParentCommitOnGitea(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	repo := createRepo(t, "merge-parent", map[string]string{"README.md": "hello\n"})
	pusher := newPushingClient(t, repo, server.Token())
	require.True(t, forges.CommitsMergeParent(pusher))
	head := startPullHead(t, ctx, pusher, repo, put("apps/cm.yaml", "a: 1\n"))
	base := externalCommit(t, repo, "main", map[string]string{"docs/other.md": "someone else\n"})

	client, counter := newCountingClient(t, repo)
	require.False(t, forges.CommitsMergeParent(client), "ChangeFiles makes commits of one parent")
	fresh := forges.CommitRequest{Branch: pullHead, ExpectedHead: head, MergeParent: base, Message: "fresh\n",
		Changes: []gitfile.Change{put("apps/cm.yaml", "a: 2\n")}}
	_, err := client.Commit(ctx, fresh)
	require.ErrorIs(t, err, forges.ErrMergeParentUnsupported)
	require.Empty(t, counter.take(), "refused before any request")

	merged, err := pusher.Commit(ctx, fresh)
	require.NoError(t, err)
	require.Equal(t, []string{head, base}, describeCommit(t, repo, merged.Commit).Parents)
}
