package github_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// TestVerifiedModeLetsGitHubSignAsTheApp: no author, committer or signature
// is sent, so GitHub signs the commit; the actor moves to a Co-authored-by
// trailer, in the message's trailer block.
func TestVerifiedModeLetsGitHubSignAsTheApp(t *testing.T) {
	sim := startSim(t)
	repo := repoName(t, "r")
	require.NoError(t, sim.CreateRepo(owner, repo, map[string]string{"a.yaml": "a: 1\n"}))
	key := registerApp(t, sim)
	client, err := forgegithub.New(forgegithub.Options{Owner: owner, Repo: repo, APIURL: sim.URL(), Verified: true,
		App: &forgegithub.AppCredentials{AppID: appID, InstallationID: installationID, PrivateKey: key}})
	require.NoError(t, err)
	ctx := context.Background()
	head, err := client.Head(ctx, "main")
	require.NoError(t, err)
	req := commitRequest("main", head, gitfile.Change{Path: "b.yaml", Content: []byte("b: 1\n")})
	req.Author = forges.Signature{Name: "alice", Email: "alice@example.com", When: req.Committer.When}
	req.Message = "Create b\n\nChanged-With: kubectl-edit\n"
	res, err := client.Commit(ctx, req)
	require.NoError(t, err)

	require.True(t, sim.AppSigned(owner, repo, res.Commit), "GitHub signed the commit as the App")
	c, err := sim.HeadCommit(owner, repo, "main")
	require.NoError(t, err)
	require.Contains(t, c.Author.Name, "[bot]", "the App is the author GitHub records")
	require.Equal(t, "Create b\n\nChanged-With: kubectl-edit\nCo-authored-by: alice <alice@example.com>", strings.TrimRight(c.Message, "\n"),
		"the actor joins the message's trailer block")
}
