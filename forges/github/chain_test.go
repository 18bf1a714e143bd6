package github_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// chainOf is n requests on main from head, the i-th putting step.yaml at i
// and a file of its own.
func chainOf(n int, head string) []forges.CommitRequest {
	reqs := make([]forges.CommitRequest, n)
	for i := range reqs {
		reqs[i] = commitRequest("main", head,
			gitfile.Change{Path: "step.yaml", Content: fmt.Appendf(nil, "step: %d\n", i)},
			gitfile.Change{Path: fmt.Sprintf("only-%d.yaml", i), Content: []byte("x: 1\n")})
	}
	return reqs
}

func TestAChainOfThreeIsATreeAndACommitEachAndOneRefUpdate(t *testing.T) {
	sim := startSim(t)
	repo, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"})
	ctx := context.Background()
	head := mainHead(t, client)
	_, err := client.Tree(ctx, head, "")
	require.NoError(t, err, "reading the tree teaches the client the head's tree")

	var results []forges.CommitResult
	made := record(t, sim, func() {
		results, err = client.CommitChain(ctx, chainOf(3, head))
		require.NoError(t, err)
	})
	require.Equal(t, []string{
		"POST git/trees", "POST git/commits",
		"POST git/trees", "POST git/commits",
		"POST git/trees", "POST git/commits",
		"PATCH git/refs/heads/main",
	}, made, "7 requests where three commits would be 9")
	require.Len(t, results, 3)
	landed, err := sim.HeadCommit(owner, repo, "main")
	require.NoError(t, err)
	require.Equal(t, results[2].Commit, landed.SHA)
	require.Equal(t, []string{results[1].Commit}, landed.Parents)
	content, ok := sim.File(owner, repo, "main", "step.yaml")
	require.True(t, ok)
	require.Equal(t, "step: 2\n", content)
	require.Equal(t, map[string]string{
		"step.yaml":   plumbing.ComputeHash(plumbing.BlobObject, []byte("step: 1\n")).String(),
		"only-1.yaml": plumbing.ComputeHash(plumbing.BlobObject, []byte("x: 1\n")).String(),
	}, results[1].Blobs, "each result names its own puts")
}

func TestAChainIsPacedAsItsRequestsWithOneRefUpdate(t *testing.T) {
	ctx := context.Background()
	// A first commit spends 3 of the minute; a chain of three needs 7 more.
	for _, tc := range []struct {
		perMinute int
		lands     bool
	}{{perMinute: 9, lands: false}, {perMinute: 10, lands: true}} {
		t.Run(fmt.Sprintf("%d a minute", tc.perMinute), func(t *testing.T) {
			sim := startSim(t)
			_, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"}, func(o *forgegithub.Options) {
				o.ContentPerMinute = tc.perMinute
			})
			first, err := client.Commit(ctx, commitRequest("main", mainHead(t, client), yamlFiles(1, "first")...))
			require.NoError(t, err)
			made := record(t, sim, func() { _, err = client.CommitChain(ctx, chainOf(3, first.Commit)) })
			if !tc.lands {
				require.ErrorIs(t, err, forges.ErrRateLimited)
				require.Empty(t, made, "a chain that does not fit sends nothing")
				return
			}
			require.NoError(t, err)
			require.Len(t, made, 7)
		})
	}
}

func TestAChainRefusedOnAMovedBranchLeavesItAlone(t *testing.T) {
	sim := startSim(t)
	repo, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"})
	head := mainHead(t, client)
	moved, err := sim.Commit(owner, repo, "main", map[string]string{"theirs.yaml": "t: 1\n"}, "external edit")
	require.NoError(t, err)
	_, err = client.CommitChain(context.Background(), chainOf(3, head))
	require.ErrorIs(t, err, forges.ErrConflict)
	landed, err := sim.HeadCommit(owner, repo, "main")
	require.NoError(t, err)
	require.Equal(t, moved, landed.SHA, "no commit of the chain is on the branch")
}

func TestAChainInAnEmptyRepositoryStartsWithTheContentsAPI(t *testing.T) {
	sim := startSim(t)
	repo := repoName(t, "empty")
	require.NoError(t, sim.CreateRepo(owner, repo, nil))
	client := newTokenClient(t, sim, repo, goodToken)
	var results []forges.CommitResult
	var err error
	made := record(t, sim, func() {
		results, err = client.CommitChain(context.Background(), chainOf(2, ""))
		require.NoError(t, err)
	})
	require.Equal(t, []string{"POST git/trees", "PUT contents/only-0.yaml",
		"POST git/trees", "POST git/commits", "POST git/trees", "POST git/commits",
		"PATCH git/refs/heads/main"}, made, "the first request's other file and the second request go on top in one ref update")
	require.Len(t, results, 2)
	require.Len(t, results[0].Blobs, 2, "the first result names the file the contents API put as well")
	landed, err := sim.HeadCommit(owner, repo, "main")
	require.NoError(t, err)
	require.Equal(t, results[1].Commit, landed.SHA)
	content, ok := sim.File(owner, repo, "main", "step.yaml")
	require.True(t, ok)
	require.Equal(t, "step: 1\n", content)
}
