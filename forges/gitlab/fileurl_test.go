package gitlab_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges/gitlab"
)

// TestFileURLIsTheBlobPageOfTheBranch: GitLab's web UI shows a branch's
// file at {project}/-/blob/{branch}/{path}; each segment is escaped. A
// project given by id has no web path, so no link.
func TestFileURLIsTheBlobPageOfTheBranch(t *testing.T) {
	client, err := gitlab.New(gitlab.Options{APIURL: "https://gitlab.example.com/api/v4", Project: "group/sub/fleet", Token: "t"})
	require.NoError(t, err)
	require.Equal(t, "https://gitlab.example.com/group/sub/fleet/-/blob/gitops-reverser/prod/apps/cm.yaml",
		client.FileURL("gitops-reverser/prod", "apps/cm.yaml"))
	require.Equal(t, "https://gitlab.example.com/group/sub/fleet/-/blob/main/a%20b/c%23d%3Fe%25.yaml",
		client.FileURL("main", "a b/c#d?e%.yaml"))

	byID, err := gitlab.New(gitlab.Options{APIURL: "https://gitlab.example.com/api/v4", Project: "42", Token: "t"})
	require.NoError(t, err)
	require.Empty(t, byID.FileURL("main", "apps/cm.yaml"))
}
