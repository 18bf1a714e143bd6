package github_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-github/v93/github"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/forgetest"
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

// TestPullRequestContract runs the shared pull request contract against
// the simulator.
func TestPullRequestContract(t *testing.T) {
	clock := &skippableClock{}
	forgetest.RunPullRequests(t, simFixture{sim: startSim(t, simgithub.WithClock(clock.Now)), clock: clock})
}

// NewPullRepo is NewRepo with a reviewer on GitHub: a plain go-github
// client that merges (PUT pulls/{n}/merge) and closes (PATCH state closed).
func (f simFixture) NewPullRepo(t *testing.T, name string, seed map[string]string) forgetest.PullRepo {
	r := f.NewRepo(t, name, seed)
	repo := repoName(t, name)
	return forgetest.PullRepo{
		Repo: r,
		Merge: func(t *testing.T, number int64) {
			_, _, err := reviewer(t, f.sim).PullRequests.Merge(context.Background(), owner, repo, int(number), "", nil)
			require.NoError(t, err)
		},
		Close: func(t *testing.T, number int64) {
			_, _, err := reviewer(t, f.sim).PullRequests.Edit(context.Background(), owner, repo, int(number),
				&github.PullRequest{State: new("closed")})
			require.NoError(t, err)
		},
	}
}

// TestAnUpdateCostsTheCommitAndOnePullRequestRequest counts the requests
// of the budget: an update of an open pull request is the 3
// requests of the commit to its head and 1 to say what changed in its
// body. Opening costs one; opening again when it exists, two; finding,
// reading and merging the base into the head, one each.
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

	// The other operations: one request each.
	for want, op := range map[string]func() error{
		"GET pulls":                 func() error { _, err := client.FindPullRequest(ctx, headBranch, "main"); return err },
		"GET pulls/1":               func() error { _, err := client.PullRequest(ctx, 1); return err },
		"PUT pulls/1/update-branch": func() error { return client.MergeBaseIntoHead(ctx, 1, head) },
	} {
		made = record(t, sim, func() { require.NoError(t, op()) })
		require.Equal(t, []string{want}, made)
	}
}

// TestAMergeParentCommitCostsTheSameThreeRequests: starting the head
// afresh from a base that moved (forges.CommitRequest.MergeParent) is the
// commit's 3 requests when the client knows the base's tree (the worker
// planned on it, reading it with Tree), and one more, the base commit's
// read, when it does not.
func TestAMergeParentCommitCostsTheSameThreeRequests(t *testing.T) {
	sim, repo, client, head := pullRepo(t, put("apps/cm-0.yaml", "n: 0\n"))
	ctx := context.Background()
	other := newTokenClient(t, sim, repo, goodToken)
	moved, err := other.Commit(ctx, commitRequest("main", mainHead(t, other), put("docs/other.md", "someone else\n")))
	require.NoError(t, err)

	fresh := commitRequest(headBranch, head, put("apps/cm-1.yaml", "n: 1\n"))
	fresh.MergeParent = moved.Commit
	var merged forges.CommitResult
	made := record(t, sim, func() {
		merged, err = client.Commit(ctx, fresh)
		require.NoError(t, err)
	})
	require.Equal(t, []string{"GET git/commits/" + moved.Commit, "POST git/trees", "POST git/commits",
		"PATCH git/refs/heads/" + headBranch}, made, "the base's tree was not known: its commit is read")

	moved, err = other.Commit(ctx, commitRequest("main", moved.Commit, put("docs/more.md", "more\n")))
	require.NoError(t, err)
	_, err = client.Tree(ctx, moved.Commit, "apps")
	require.NoError(t, err)
	fresh = commitRequest(headBranch, merged.Commit, put("apps/cm-2.yaml", "n: 2\n"))
	fresh.MergeParent = moved.Commit
	made = record(t, sim, func() {
		_, err = client.Commit(ctx, fresh)
		require.NoError(t, err)
	})
	require.Equal(t, []string{"POST git/trees", "POST git/commits", "PATCH git/refs/heads/" + headBranch}, made,
		"planned on the base's tree, read with Tree: the commit's 3 requests")
}
