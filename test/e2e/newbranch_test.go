package e2e

import (
	"encoding/base64"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"
)

// TestANewBranchThroughTheGiteaAPIStartsFromTheDefaultBranch mirrors into
// a branch the repository does not have yet. The branch starts from main's
// head, so it can be compared with main and merged, and a document main
// already holds under the target's path is edited where it is.
func TestANewBranchThroughTheGiteaAPIStartsFromTheDefaultBranch(t *testing.T) {
	g := sharedGitea(t)
	repo, err := g.CreateRepo("gitea-new-branch", true)
	require.NoError(t, err)
	owner, name, ns := repo.Owner.UserName, "gitea-new-branch", "via-gitea-branch"
	api := g.Client()
	_, _, err = api.CreateFile(owner, name, "live/hand-written.yaml", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "a ConfigMap by hand", BranchName: "main"},
		Content: base64.StdEncoding.EncodeToString([]byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n  namespace: " + ns + "\ndata:\n  v: \"0\"\n")),
	})
	require.NoError(t, err)
	main, _, err := api.GetRepoBranch(owner, name, "main")
	require.NoError(t, err)

	giteaMirror(t, g, ns, owner, name, "mirror/prod")
	startOperator(t)

	var first *gitea.Commit
	eventually(t, "the first commit on mirror/prod", func() bool {
		commits, _, err := api.ListRepoCommits(owner, name, gitea.ListCommitOptions{SHA: "mirror/prod"})
		if err != nil || len(commits) == 0 {
			return false
		}
		first = commits[0]
		return true
	})
	require.Len(t, first.Parents, 1)
	require.Equal(t, main.Commit.ID, first.Parents[0].SHA, "the new branch starts from main's head")
	content, _, err := api.GetContents(owner, name, first.SHA, "live/hand-written.yaml")
	require.NoError(t, err)
	written, err := base64.StdEncoding.DecodeString(*content.Content)
	require.NoError(t, err)
	require.True(t, strings.Contains(string(written), `v: "1"`), "main's document is edited in place: %s", written)
	_, _, err = api.GetContents(owner, name, first.SHA, "live/"+ns+"/configmaps/first.yaml")
	require.Error(t, err, "and not written again at its own path")
	after, _, err := api.GetRepoBranch(owner, name, "main")
	require.NoError(t, err)
	require.Equal(t, main.Commit.ID, after.Commit.ID, "main did not move")
}
