package github_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-github/v93/github"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/gitfile"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

const headBranch = "gitops-reverser/mirror"

// reviewer is someone on GitHub merging or closing the pull request: a
// plain go-github client on the simulator, not the client under test.
func reviewer(t *testing.T, sim *simgithub.Server) *github.Client {
	t.Helper()
	client, err := github.NewClient(github.WithURLs(new(sim.URL()+"/"), nil), github.WithAuthToken(goodToken))
	require.NoError(t, err)
	return client
}

func put(path, content string) gitfile.Change {
	return gitfile.Change{Path: path, Content: []byte(content)}
}

// pullRepo starts a simulator with a repository whose head branch is one
// commit (change) ahead of main, and returns the repository's name, a
// client on it and the head commit.
func pullRepo(t *testing.T, change gitfile.Change) (*simgithub.Server, string, *forgegithub.Client, string) {
	t.Helper()
	sim := startSim(t)
	repo, client := tokenRepo(t, sim, map[string]string{"README.md": "hello\n"})
	result, err := client.Commit(context.Background(), forges.CommitRequest{Branch: headBranch, BaseHead: mainHead(t, client),
		Message: "mirror\n", Author: alice, Committer: bot, Changes: []gitfile.Change{change}})
	require.NoError(t, err)
	return sim, repo, client, result.Commit
}

// TestPullRequestLifecycle: the first change opens the pull request, an
// open of the same pair finds it instead of making a second, the body is
// edited, a reviewer merges it, and then it reads merged and is no longer
// found; the next change opens a new one.
func TestPullRequestLifecycle(t *testing.T) {
	sim, repo, client, head := pullRepo(t, put("apps/cm.yaml", "a: 1\n"))
	ctx := context.Background()

	_, err := client.FindPullRequest(ctx, headBranch, "main")
	require.ErrorIs(t, err, forges.ErrNotFound, "no pull request yet")

	opts := forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror", Body: "1 created"}
	opened, created, err := client.OpenPullRequest(ctx, opts)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, forges.PullRequest{Number: 1, URL: "https://github.com/configbutler/" + repo + "/pull/1",
		State: forges.PullRequestOpen, Head: headBranch, Base: "main", HeadCommit: head, Title: "Mirror", Body: "1 created"}, opened)
	require.Equal(t, opened.URL, client.PullRequestURL(1))

	found, err := client.FindPullRequest(ctx, headBranch, "main")
	require.NoError(t, err)
	require.Equal(t, opened, found)

	again, created, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Other", Body: "other"})
	require.NoError(t, err)
	require.False(t, created, "an open pull request for the pair is returned, not duplicated")
	require.Equal(t, opened, again, "and left as it was")

	edited, err := client.EditPullRequest(ctx, 1, forges.PullRequestOptions{Title: "Mirror", Body: "2 created"})
	require.NoError(t, err)
	require.Equal(t, "2 created", edited.Body)

	_, _, err = reviewer(t, sim).PullRequests.Merge(ctx, owner, repo, 1, "", &github.PullRequestOptions{SHA: head})
	require.NoError(t, err)
	merged, err := client.PullRequest(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, forges.PullRequestMerged, merged.State)
	content, ok := sim.File(owner, repo, "main", "apps/cm.yaml")
	require.True(t, ok)
	require.Equal(t, "a: 1\n", content)
	_, err = client.FindPullRequest(ctx, headBranch, "main")
	require.ErrorIs(t, err, forges.ErrNotFound, "a merged pull request is not the open one")

	// After the merge the next change starts a fresh head from the base.
	fresh := forges.CommitRequest{Branch: "gitops-reverser/mirror-2", BaseHead: mainHead(t, client), Message: "mirror\n",
		Author: alice, Committer: bot, Changes: []gitfile.Change{put("apps/cm.yaml", "a: 2\n")}}
	_, err = client.Commit(ctx, fresh)
	require.NoError(t, err)
	second, created, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: fresh.Branch, Base: "main", Title: "Mirror"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, int64(2), second.Number)
}

func TestAClosedPullRequestReadsClosed(t *testing.T) {
	sim, repo, client, _ := pullRepo(t, put("a.yaml", "a: 1\n"))
	ctx := context.Background()
	opened, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror"})
	require.NoError(t, err)

	_, _, err = reviewer(t, sim).PullRequests.Edit(ctx, owner, repo, int(opened.Number), &github.PullRequest{State: new("closed")})
	require.NoError(t, err)
	closed, err := client.PullRequest(ctx, opened.Number)
	require.NoError(t, err)
	require.Equal(t, forges.PullRequestClosed, closed.State)
	_, err = client.FindPullRequest(ctx, headBranch, "main")
	require.ErrorIs(t, err, forges.ErrNotFound)
	require.ErrorIs(t, client.MergeBaseIntoHead(ctx, opened.Number, closed.HeadCommit), forges.ErrConflict,
		"a closed pull request is not updated: read it again")
}

func TestOpeningFromAMissingBranchIsNotFound(t *testing.T) {
	sim := startSim(t)
	_, client := tokenRepo(t, sim, map[string]string{"README.md": "hello\n"})
	ctx := context.Background()
	_, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: "no-such-branch", Base: "main", Title: "x"})
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = client.PullRequest(ctx, 42)
	require.ErrorIs(t, err, forges.ErrNotFound)
}

// TestMergeBaseIntoHead: a stale expected head is refused (ErrConflict),
// a base that moved elsewhere is merged in, a base that changed the same
// file is ErrMergeConflict, and a head that has the base already is a
// no-op.
func TestMergeBaseIntoHead(t *testing.T) {
	sim, repo, client, head := pullRepo(t, put("apps/cm.yaml", "a: 1\n"))
	ctx := context.Background()
	opened, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror"})
	require.NoError(t, err)

	require.NoError(t, client.MergeBaseIntoHead(ctx, opened.Number, head), "nothing new on the base: nothing to do")

	_, err = sim.Commit(owner, repo, "main", map[string]string{"docs/other.md": "someone else\n"}, "a human on main")
	require.NoError(t, err)
	stale := "0123456789012345678901234567890123456789"
	require.ErrorIs(t, client.MergeBaseIntoHead(ctx, opened.Number, stale), forges.ErrConflict)
	require.Equal(t, head, headOf(t, sim, repo, headBranch), "a refused update changes nothing")

	require.NoError(t, client.MergeBaseIntoHead(ctx, opened.Number, head))
	updated, err := client.PullRequest(ctx, opened.Number)
	require.NoError(t, err)
	require.NotEqual(t, head, updated.HeadCommit)
	content, ok := sim.File(owner, repo, headBranch, "docs/other.md")
	require.True(t, ok, "the base's commit is in the head")
	require.Equal(t, "someone else\n", content)
	content, _ = sim.File(owner, repo, headBranch, "apps/cm.yaml")
	require.Equal(t, "a: 1\n", content, "and the head's own change is kept")

	_, err = sim.Commit(owner, repo, "main", map[string]string{"apps/cm.yaml": "a: human\n"}, "a human edits the mirrored file")
	require.NoError(t, err)
	_, err = client.Commit(ctx, commitRequest(headBranch, updated.HeadCommit, put("apps/cm.yaml", "a: 2\n")))
	require.NoError(t, err)
	current := headOf(t, sim, repo, headBranch)
	require.ErrorIs(t, client.MergeBaseIntoHead(ctx, opened.Number, current), forges.ErrMergeConflict)
	require.Equal(t, current, headOf(t, sim, repo, headBranch), "a conflicting update changes nothing")
}

func headOf(t *testing.T, sim *simgithub.Server, repo, branch string) string {
	t.Helper()
	head, err := sim.HeadCommit(owner, repo, branch)
	require.NoError(t, err)
	return head.SHA
}

// TestAnUpdateCostsTheCommitAndOnePullRequestRequest counts the requests
// of the budget: an update of an open pull request is the 3
// requests of the commit to its head and 1 to say what changed in its
// body. Opening costs one; opening again when it exists, two.
func TestAnUpdateCostsTheCommitAndOnePullRequestRequest(t *testing.T) {
	sim, _, client, head := pullRepo(t, put("apps/cm-0.yaml", "n: 0\n"))
	ctx := context.Background()
	var opened forges.PullRequest
	made := record(t, sim, func() {
		var err error
		opened, _, err = client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror"})
		require.NoError(t, err)
	})
	require.Equal(t, []string{"POST pulls"}, made)
	made = record(t, sim, func() {
		_, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror"})
		require.NoError(t, err)
	})
	require.Equal(t, []string{"POST pulls", "GET pulls"}, made)

	for i := 1; i <= 10; i++ {
		made = record(t, sim, func() {
			result, err := client.Commit(ctx, commitRequest(headBranch, head, put(fmt.Sprintf("apps/cm-%d.yaml", i), "n: 1\n")))
			require.NoError(t, err)
			head = result.Commit
			_, err = client.EditPullRequest(ctx, opened.Number, forges.PullRequestOptions{Title: "Mirror", Body: fmt.Sprintf("%d created", i+1)})
			require.NoError(t, err)
		})
		require.Equal(t, []string{"POST git/trees", "POST git/commits", "PATCH git/refs/heads/" + headBranch, "PATCH pulls/1"}, made)
	}
	pulls, _, err := reviewer(t, sim).PullRequests.List(ctx, owner, repoName(t, "r"), &github.PullRequestListOptions{State: "all"})
	require.NoError(t, err)
	require.Len(t, pulls, 1, "ten updates, one pull request")
}
