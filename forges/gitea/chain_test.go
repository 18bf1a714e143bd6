package gitea

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// chainOn is n requests on main from head: the i-th changes shared.yaml
// (seeded with "step: seed", or absent in an empty repository), puts a
// file of its own and deletes the one the request before put, so each
// later commit updates and deletes what the chain itself wrote, naming the
// blob the one before wrote as its base.
func chainOn(head string, n int, seeded bool) []forges.CommitRequest {
	reqs := make([]forges.CommitRequest, n)
	for i := range reqs {
		shared := put("dir/shared.yaml", fmt.Sprintf("step: %d\n", i))
		switch {
		case i > 0:
			shared = forgetest.Update(shared.Path, fmt.Sprintf("step: %d\n", i-1), string(shared.Content))
		case seeded:
			shared = forgetest.Update(shared.Path, "step: seed\n", string(shared.Content))
		}
		changes := []gitfile.Change{shared, put(fmt.Sprintf("dir/only-%d.yaml", i), "x: 1\n")}
		if i > 0 {
			changes = append(changes, forgetest.Delete(fmt.Sprintf("dir/only-%d.yaml", i-1), "x: 1\n"))
		}
		reqs[i] = commitRequest(head, fmt.Sprintf("step %d\n", i), changes...)
		reqs[i].Author.Name = fmt.Sprintf("Author %d", i)
	}
	return reqs
}

// TestAChainListsNoTreeAndMovesTheBranchOnce counts the requests of a
// chain of three on a head: a ChangeFiles per commit, planned on the
// changes' base blobs (each later one on the blobs the one before wrote),
// one branch move and the scratch branch's deletion; no tree is listed.
func TestAChainListsNoTreeAndMovesTheBranchOnce(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "chain-requests", map[string]string{"dir/shared.yaml": "step: seed\n"})
	client, counter := newCountingClient(t, repo)
	ctx := testContext(t)
	head := sdkHead(t, repo, "main")

	results, err := client.CommitChain(ctx, chainOn(head, 3, true))
	require.NoError(t, err)
	repoAPI := "/api/v1/repos/" + server.AdminUser() + "/" + repo
	requests := counter.take()
	requireNoTreeListing(t, requests)
	requireRequests(t, requests, "a chain of 3 on a head is 5 requests, where 3 commits are 9",
		"POST "+repoAPI+"/contents",
		"POST "+repoAPI+"/contents",
		"POST "+repoAPI+"/contents",
		"PUT "+repoAPI+"/branches/main",
		"DELETE "+repoAPI+"/branches/"+scratchBranchPrefix)
	require.Len(t, results, 3)
	require.Equal(t, results[2].Commit, sdkHead(t, repo, "main"))
	parent := head
	for i, result := range results {
		commit := describeCommit(t, repo, result.Commit)
		require.Equal(t, []string{parent}, commit.Parents, "commit %d is on the one before", i)
		require.Equal(t, fmt.Sprintf("Author %d", i), commit.AuthorName)
		parent = result.Commit
	}
	content, ok := fileAt(t, repo, "main", "dir/shared.yaml")
	require.True(t, ok)
	require.Equal(t, "step: 2\n", content)
	_, ok = fileAt(t, repo, "main", "dir/only-1.yaml")
	require.False(t, ok, "the last commit deleted what the one before put")
	require.Equal(t, []string{"main"}, branches(t, repo), "no scratch branch is left")

	entries, err := client.Tree(ctx, results[2].Commit, "")
	require.NoError(t, err)
	stored := map[string]string{}
	for _, entry := range entries {
		stored[entry.Path] = entry.BlobID
	}
	require.Equal(t, stored, results[2].Blobs, "the computed blob ids are the ones Gitea stored")
}

// TestAChainOnAMovedBranchLeavesNoCommitAndNoScratchBranch: the target
// moved after the chain's commits were made on the scratch branch; the
// branch move refuses them all.
func TestAChainOnAMovedBranchLeavesNoCommitAndNoScratchBranch(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "chain-moved", map[string]string{"dir/shared.yaml": "step: seed\n", "theirs.yaml": "v: 1\n"})
	head := sdkHead(t, repo, "main")
	var external string
	client := newInterceptedClient(t, repo, http.MethodPut, func() {
		external = externalCommit(t, repo, "main", map[string]string{"theirs.yaml": "v: external\n"})
	})
	_, err := client.CommitChain(testContext(t), chainOn(head, 3, true))
	require.ErrorIs(t, err, forges.ErrConflict)
	require.Equal(t, external, sdkHead(t, repo, "main"), "no commit of the chain is on the branch")
	require.Equal(t, []string{"main"}, branches(t, repo), "the scratch branch is dropped")
}

// TestAChainOnANewBranchCreatesItWithTheLastCommit: tree, scratch branch,
// a ChangeFiles per commit (the last creating the target) and the scratch
// branch's deletion.
func TestAChainOnANewBranchCreatesItWithTheLastCommit(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "chain-new-branch", map[string]string{"dir/shared.yaml": "step: seed\n"})
	client, counter := newCountingClient(t, repo)
	reqs := chainOn("", 3, true)
	for i := range reqs {
		reqs[i].Branch = "feature"
	}
	reqs[0].BaseHead = sdkHead(t, repo, "main")
	results, err := client.CommitChain(testContext(t), reqs)
	require.NoError(t, err)
	require.Len(t, counter.take(), 5, "a chain of 3 on a new branch is 5 requests")
	require.Equal(t, results[2].Commit, sdkHead(t, repo, "feature"))
	require.Equal(t, []string{results[1].Commit}, describeCommit(t, repo, results[2].Commit).Parents)
	require.Equal(t, []string{"feature", "main"}, branches(t, repo))
}

// TestAChainInAnEmptyRepositoryGoesOnItsFirstCommit: the first commit
// creates the branch on its own, the rest of the chain follows on it with
// one branch move.
func TestAChainInAnEmptyRepositoryGoesOnItsFirstCommit(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "chain-empty", nil)
	client, counter := newCountingClient(t, repo)
	results, err := client.CommitChain(testContext(t), chainOn("", 3, false))
	require.NoError(t, err)
	repoAPI := "/api/v1/repos/" + server.AdminUser() + "/" + repo
	requireRequests(t, counter.take(), "the first commit, then a chain of 2 on it",
		"POST "+repoAPI+"/contents",
		"POST "+repoAPI+"/contents",
		"POST "+repoAPI+"/contents",
		"PUT "+repoAPI+"/branches/main",
		"DELETE "+repoAPI+"/branches/"+scratchBranchPrefix)
	require.Equal(t, results[2].Commit, sdkHead(t, repo, "main"))
	require.Empty(t, describeCommit(t, repo, results[0].Commit).Parents)
	require.Equal(t, []string{"main"}, branches(t, repo))
}
