package e2e

import (
	"encoding/base64"
	"os"
	"strings"
	"sync"
	"testing"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// giteaServer is started by the first test that needs it, so the other
// tests of the package do not pay for it.
var giteaServer struct {
	once sync.Once
	g    *harness.Gitea
	dir  string // its state, repositories included
	err  error
}

func sharedGitea(t *testing.T) *harness.Gitea {
	t.Helper()
	giteaServer.once.Do(func() {
		dir, err := os.MkdirTemp("", "e2e-gitea-")
		if err != nil {
			giteaServer.err = err
			return
		}
		giteaServer.dir = dir
		giteaServer.g, giteaServer.err = harness.StartGitea(dir)
	})
	require.NoError(t, giteaServer.err)
	return giteaServer.g
}

// giteaMirror mirrors the ConfigMaps of namespace ns, starting with one
// named first, to path live on branch of a Gitea repository, through the
// Gitea API forge.
func giteaMirror(t *testing.T, g *harness.Gitea, ns, owner, repo, branch string) {
	t.Helper()
	giteaMirrorWith(t, g, ns, owner, repo, branch, []string{branch}, nil)
}

// TestThePipelineCommitsThroughTheGiteaAPI runs the core cases through the
// Gitea API forge against a real Gitea: create, update and delete reach
// Gitea with the configured author and committer, an external commit made
// through Gitea's API between the operator's writes is kept, and no clone
// or worktree is written to disk.
func TestThePipelineCommitsThroughTheGiteaAPI(t *testing.T) {
	g := sharedGitea(t)
	repo, err := g.CreateRepo("gitea-mirror", true)
	require.NoError(t, err)
	owner := repo.Owner.UserName
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // a clone or worktree would have to land somewhere

	ns := "via-gitea"
	giteaMirror(t, g, ns, owner, "gitea-mirror", "main")
	startOperator(t)
	api := g.Client()
	file := func(path string) string {
		c, _, err := api.GetContents(owner, "gitea-mirror", "main", path)
		if err != nil || c.Content == nil {
			return ""
		}
		b, _ := base64.StdEncoding.DecodeString(*c.Content)
		return string(b)
	}
	eventually(t, "the ConfigMap in Gitea", func() bool { return file("live/via-gitea/configmaps/first.yaml") != "" })
	commits, _, err := api.ListRepoCommits(owner, "gitea-mirror", gitea.ListCommitOptions{SHA: "main"})
	require.NoError(t, err)
	require.Equal(t, "GitOps Reverser", commits[0].RepoCommit.Author.Name)
	require.Equal(t, "noreply@configbutler.ai", commits[0].RepoCommit.Committer.Email)

	_, _, err = api.CreateFile(owner, "gitea-mirror", "NOTES.md", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "human edit", BranchName: "main"},
		Content:     base64.StdEncoding.EncodeToString([]byte("by a human\n")),
	})
	require.NoError(t, err)
	var cm corev1.ConfigMap
	require.NoError(t, env.kube.Client().Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "first"}, &cm))
	cm.Data["v"] = "2"
	require.NoError(t, env.kube.Client().Update(t.Context(), &cm))
	eventually(t, "the update on top of the external commit", func() bool {
		return strings.Contains(file("live/via-gitea/configmaps/first.yaml"), `v: "2"`)
	})
	require.Equal(t, "by a human\n", file("NOTES.md"), "the external commit is kept")

	require.NoError(t, env.kube.Client().Delete(t.Context(), &cm))
	eventually(t, "the delete in Gitea", func() bool { return file("live/via-gitea/configmaps/first.yaml") == "" })

	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was written to disk: no clone, no worktree")
	// The scratch branch is deleted right after the branch moves, so give
	// the last commit's clean-up a moment.
	eventually(t, "no scratch branch left behind", func() bool {
		branches, _, err := api.ListRepoBranches(owner, "gitea-mirror", gitea.ListRepoBranchesOptions{})
		return err == nil && len(branches) == 1 && branches[0].Name == "main"
	})
}
