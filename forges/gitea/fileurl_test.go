package gitea

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFileURLIsTheSourcePageOfTheBranch: Gitea's web UI shows a branch's
// file at /src/branch/{branch}/{path}, below a path prefix when the server
// has one; each segment is escaped as Gitea escapes it.
func TestFileURLIsTheSourcePageOfTheBranch(t *testing.T) {
	client, err := New(Options{BaseURL: "https://git.example.com/gitea/", Owner: "acme", Repo: "fleet.git"})
	require.NoError(t, err)
	require.Equal(t, "https://git.example.com/gitea/acme/fleet/src/branch/gitops-reverser/prod/apps/cm.yaml",
		client.FileURL("gitops-reverser/prod", "apps/cm.yaml"))
	require.Equal(t, "https://git.example.com/gitea/acme/fleet/src/branch/main/a%20b/c%23d%3Fe%25.yaml",
		client.FileURL("main", "a b/c#d?e%.yaml"))
}
