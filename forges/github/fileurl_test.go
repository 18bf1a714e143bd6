package github_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
)

// TestFileURLIsTheBlobPageOfTheBranch: GitHub's web UI shows a branch's
// file at /blob/{branch}/{path}, on github.com or the configured web base;
// each segment is escaped and the slashes between them kept.
func TestFileURLIsTheBlobPageOfTheBranch(t *testing.T) {
	client, err := forgegithub.New(forgegithub.Options{Owner: "acme", Repo: "fleet", Token: "t"})
	require.NoError(t, err)
	require.Equal(t, "https://github.com/acme/fleet/blob/gitops-reverser/prod/apps/cm.yaml",
		client.FileURL("gitops-reverser/prod", "apps/cm.yaml"))
	require.Equal(t, "https://github.com/acme/fleet/blob/main/a%20b/c%23d%3Fe%25.yaml",
		client.FileURL("main", "a b/c#d?e%.yaml"), "a space, #, ? or % cannot end or change the URL")

	enterprise, err := forgegithub.New(forgegithub.Options{Owner: "acme", Repo: "fleet", Token: "t",
		APIURL: "https://ghe.example.com/api/v3", WebURL: "https://ghe.example.com/"})
	require.NoError(t, err)
	require.Equal(t, "https://ghe.example.com/acme/fleet/blob/main/apps/cm.yaml", enterprise.FileURL("main", "apps/cm.yaml"))
}
