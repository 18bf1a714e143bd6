package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestConfigMapLifecycleReachesGitSanitized(t *testing.T) {
	m := newMirror(t, "lifecycle", "configmaps")
	startOperator(t)
	waitReady(t, m.ns, m.target)
	ctx := context.Background()
	path := m.path + "/lifecycle/configmaps/app-config.yaml"

	apply(t, configMap(m.ns, "app-config", map[string]string{"LOG_LEVEL": "info", "config.yaml": "a: 1\nb: 2\n"}))
	eventually(t, "the created ConfigMap in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	content := gitFile(t, m.repo, path)
	require.Equal(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: lifecycle
data:
  LOG_LEVEL: info
  config.yaml: |
    a: 1
    b: 2
`, content, "sanitized: no uid, resourceVersion, managedFields or creationTimestamp")
	require.NotEmpty(t, gitFile(t, m.repo, m.path+"/README.md"), "the first write bootstraps a README")

	var cm corev1.ConfigMap
	require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "app-config"}, &cm))
	cm.Data["LOG_LEVEL"] = "debug"
	require.NoError(t, env.kube.Client().Update(ctx, &cm))
	eventually(t, "the update in Git", func() bool {
		return containsLine(gitFile(t, m.repo, path), "  LOG_LEVEL: debug")
	})
	log, err := env.git.Git(m.repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s")
	require.NoError(t, err)
	require.Equal(t, "GitOps Reverser <noreply@configbutler.ai>|GitOps Reverser <noreply@configbutler.ai>|Update ConfigMap lifecycle/app-config", log)

	require.NoError(t, env.kube.Client().Delete(ctx, &cm))
	eventually(t, "the delete in Git", func() bool { return gitFile(t, m.repo, path) == "" })
}
