package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestStatusRecoversOnceUnsupportedContentIsRemoved: a file that is not a
// Kubernetes object refuses the path; once a human removes it, the
// ConfigMap commits and the status says so, with the new commit as
// status.lastCommit (it used to keep naming the removed file).
func TestStatusRecoversOnceUnsupportedContentIsRemoved(t *testing.T) {
	m := newMirror(t, "unsupported-cleared", "configmaps")
	notes := m.path + "/notes.yaml"
	pushExternalCommit(t, m.repo, notes, "just: a note\n")
	startOperator(t)
	apply(t, configMap(m.ns, "app", map[string]string{"k": "v"}))
	eventually(t, "GitPathAccepted=False/UnsupportedContent", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionGitPathAccepted)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha3.ReasonUnsupportedContent
	})

	removeExternally(t, m.repo, notes)
	eventually(t, "the ConfigMap in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/unsupported-cleared/configmaps/app.yaml") != ""
	})
	head, err := env.git.Git(m.repo, "rev-parse", "main")
	require.NoError(t, err)
	eventually(t, "GitPathAccepted=True and status.lastCommit at the new head", func() bool {
		var gt v1alpha3.GitTarget
		if err := env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: m.target}, &gt); err != nil {
			return false
		}
		return conditionStatus(t, m.ns, m.target, v1alpha3.ConditionGitPathAccepted) == metav1.ConditionTrue &&
			gt.Status.LastCommit != nil && gt.Status.LastCommit.SHA == head
	})
	waitReady(t, m.ns, m.target)
}

// removeExternally deletes a file from main in a commit of its own, as a
// human would.
func removeExternally(t *testing.T, repo, path string) {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Human", "GIT_AUTHOR_EMAIL=human@example.com",
			"GIT_COMMITTER_NAME=Human", "GIT_COMMITTER_EMAIL=human@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	}
	git("clone", "--quiet", "--branch", "main", env.git.RepoPath(repo), ".")
	git("rm", "--quiet", path)
	git("commit", "--quiet", "-m", "human removes "+path)
	git("push", "--quiet", "origin", "main")
}
