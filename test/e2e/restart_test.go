package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestChangesWhileStoppedAreReconciledInOneCommit covers the mark-and-sweep:
// objects deleted, changed and created while no operator ran reach Git in
// one commit after a restart, and a restart with nothing changed commits
// nothing.
func TestChangesWhileStoppedAreReconciledInOneCommit(t *testing.T) {
	m := newMirror(t, "restart", "configmaps")
	ctx := context.Background()
	for _, name := range []string{"keep", "edit", "gone"} {
		apply(t, configMap(m.ns, name, map[string]string{"v": "1"}))
	}
	stop := startOperator(t)
	waitReady(t, m.ns, m.target)
	eventually(t, "the three ConfigMaps in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/restart/configmaps/gone.yaml") != "" &&
			gitFile(t, m.repo, m.path+"/restart/configmaps/edit.yaml") != "" &&
			gitFile(t, m.repo, m.path+"/restart/configmaps/keep.yaml") != ""
	})
	stop()
	before := commitCount(t, m.repo)

	require.NoError(t, env.kube.Client().Delete(ctx, configMap(m.ns, "gone", nil)))
	var cm corev1.ConfigMap
	require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "edit"}, &cm))
	cm.Data["v"] = "2"
	require.NoError(t, env.kube.Client().Update(ctx, &cm))
	apply(t, configMap(m.ns, "new", map[string]string{"v": "1"}))

	stop = startOperator(t)
	eventually(t, "the offline changes in Git", func() bool {
		return gitFile(t, m.repo, m.path+"/restart/configmaps/gone.yaml") == "" &&
			containsLine(gitFile(t, m.repo, m.path+"/restart/configmaps/edit.yaml"), `  v: "2"`) &&
			gitFile(t, m.repo, m.path+"/restart/configmaps/new.yaml") != ""
	})
	require.Equal(t, before+1, commitCount(t, m.repo), "the reconcile is one commit:\n%s", gitLog(t, m.repo))
	subject, err := env.git.Git(m.repo, "log", "-1", "--format=%s")
	require.NoError(t, err)
	require.Equal(t, "Reconcile restart/mirror with the cluster: 1 created, 1 updated, 1 deleted", subject)
	reconcile, err := env.git.Git(m.repo, "rev-parse", "main")
	require.NoError(t, err)
	waitReady(t, m.ns, m.target)
	stop()

	// A restart with nothing changed, then a sentinel change: the first
	// commit after the reconcile one carries the sentinel and nothing else.
	// (Whether the sentinel joins the replay's window or follows it, any
	// change the replay wrongly found would show up before it or beside it.)
	sentinel := m.path + "/restart/configmaps/sentinel.yaml"
	startOperator(t)
	waitReady(t, m.ns, m.target)
	apply(t, configMap(m.ns, "sentinel", map[string]string{"v": "1"}))
	eventually(t, "the sentinel ConfigMap in Git", func() bool { return gitFile(t, m.repo, sentinel) != "" })
	parent, err := env.git.Git(m.repo, "rev-parse", "main^")
	require.NoError(t, err)
	require.Equal(t, reconcile, parent, "a restart with nothing changed makes no commit:\n%s", gitLog(t, m.repo))
	changed, err := env.git.Git(m.repo, "show", "--name-only", "--format=", "main")
	require.NoError(t, err)
	require.Equal(t, sentinel, changed, "the restart's replay changed nothing:\n%s", gitLog(t, m.repo))
}
