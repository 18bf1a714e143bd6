package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// TestTheToolOfAChangeIsAChangedWithTrailer: with no attribution source,
// the field manager of a change (metadata.managedFields) names the tool in
// a Changed-With trailer, never the author; a delete names no tool.
func TestTheToolOfAChangeIsAChangedWithTrailer(t *testing.T) {
	m := newMirror(t, "changed-with", "configmaps")
	startOperator(t)
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.kube.Config())
	require.NoError(t, err)
	configMaps := cs.CoreV1().ConfigMaps(m.ns)
	pathOf := func(name string) string { return m.path + "/changed-with/configmaps/" + name + ".yaml" }
	// lastMessage is the full message of the last commit that touched path.
	lastMessage := func(path string) string {
		out, err := env.git.Git(m.repo, "log", "-1", "--format=%an <%ae>%n%B", "main", "--", path)
		require.NoError(t, err)
		return strings.TrimRight(out, "\n")
	}
	const committer = "GitOps Reverser <noreply@configbutler.ai>"

	_, err = configMaps.Create(ctx, configMap(m.ns, "edited", map[string]string{"k": "1"}), metav1.CreateOptions{FieldManager: "kubectl-edit"})
	require.NoError(t, err)
	eventually(t, "the created ConfigMap in Git", func() bool { return gitFile(t, m.repo, pathOf("edited")) != "" })
	require.Equal(t, committer+"\nCreate ConfigMap changed-with/edited\n\nChanged-With: kubectl-edit", lastMessage(pathOf("edited")),
		"the tool is a trailer; the author stays the committer")

	edited, err := configMaps.Get(ctx, "edited", metav1.GetOptions{})
	require.NoError(t, err)
	edited.Data["k"] = "2"
	_, err = configMaps.Update(ctx, edited, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
	require.NoError(t, err)
	eventually(t, "the update in Git", func() bool { return containsLine(gitFile(t, m.repo, pathOf("edited")), `  k: "2"`) })
	require.Equal(t, committer+"\nUpdate ConfigMap changed-with/edited\n\nChanged-With: kubectl-edit", lastMessage(pathOf("edited")))

	_, err = configMaps.Apply(ctx, corev1ac.ConfigMap("released", m.ns).WithData(map[string]string{"chart": "app-1.0.0"}),
		metav1.ApplyOptions{FieldManager: "helm", Force: true})
	require.NoError(t, err)
	eventually(t, "the server-side applied ConfigMap in Git", func() bool { return gitFile(t, m.repo, pathOf("released")) != "" })
	require.Equal(t, committer+"\nCreate ConfigMap changed-with/released\n\nChanged-With: helm", lastMessage(pathOf("released")))

	require.NoError(t, configMaps.Delete(ctx, "released", metav1.DeleteOptions{}))
	eventually(t, "the delete in Git", func() bool { return gitFile(t, m.repo, pathOf("released")) == "" })
	require.Equal(t, committer+"\nDelete ConfigMap changed-with/released", lastMessage(pathOf("released")),
		"the last managedFields of a deleted object name its last writer, not its deleter: no trailer")
}
