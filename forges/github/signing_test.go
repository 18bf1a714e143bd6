package github_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// TestSignedRequestsGitHubCannotCarryAreRefused: where GitHub would make
// the commit without the operator's signature (verified mode, where GitHub
// signs; the first commit of an empty repository, which only the contents
// API can make), a signed request is refused and nothing is written,
// rather than an unsigned commit.
func TestSignedRequestsGitHubCannotCarryAreRefused(t *testing.T) {
	sim := startSim(t)
	ctx := context.Background()
	signer := &recordingSigner{}

	t.Run("verified mode", func(t *testing.T) {
		repo := repoName(t, "verified")
		require.NoError(t, sim.CreateRepo(owner, repo, map[string]string{"a.yaml": "a: 1\n"}))
		client := newTokenClient(t, sim, repo, goodToken, func(o *forgegithub.Options) { o.Verified = true })
		require.False(t, forges.CarriesSignatures(client))
		head, err := client.Head(ctx, "main")
		require.NoError(t, err)
		req := commitRequest("main", head, gitfile.Change{Path: "b.yaml", Content: []byte("b: 1\n")})
		req.Signer = signer
		_, err = client.Commit(ctx, req)
		require.ErrorIs(t, err, forges.ErrSigningUnsupported)
		require.ErrorContains(t, err, "GitHub signs the commit as the App")
		stored, err := sim.HeadCommit(owner, repo, "main")
		require.NoError(t, err)
		require.Equal(t, head, stored.SHA)
	})

	t.Run("empty repository", func(t *testing.T) {
		repo := repoName(t, "empty")
		require.NoError(t, sim.CreateRepo(owner, repo, nil))
		client := newTokenClient(t, sim, repo, goodToken)
		require.True(t, forges.CarriesSignatures(client))
		req := commitRequest("main", "", gitfile.Change{Path: "b.yaml", Content: []byte("b: 1\n")})
		req.Signer = signer
		_, err := client.Commit(ctx, req)
		require.ErrorIs(t, err, forges.ErrSigningUnsupported)
		require.ErrorContains(t, err, "push a first commit")
		_, err = sim.HeadCommit(owner, repo, "main")
		require.Error(t, err, "the repository is still empty")
	})
	require.Nil(t, signer.payload, "nothing was signed")
}
