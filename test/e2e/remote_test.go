package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestAClusterProviderWithAKubeconfigMirrorsThroughIt: a source selected by
// a kubeconfig Secret in the operator namespace (here a second API server)
// mirrors like the local one, what it mirrors is the remote cluster's and
// not the local one's, and a missing Secret says so.
func TestAClusterProviderWithAKubeconfigMirrorsThroughIt(t *testing.T) {
	m := newMirror(t, "remote-source")
	remote, err := harness.StartKube(harness.KubeOptions{SkipCRDs: true})
	require.NoError(t, err)
	t.Cleanup(remote.Stop)
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.ns}},
		configMap(m.ns, "far-away", map[string]string{"k": "remote"}),
	} {
		require.NoError(t, remote.Client().Create(ctx, obj))
	}
	kubeconfig, err := remote.Kubeconfig()
	require.NoError(t, err)
	apply(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "remote-kubeconfig"},
			Data: map[string][]byte{"value": kubeconfig}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "remote"}, Spec: v1alpha3.ClusterProviderSpec{
			KubeConfig:        &v1alpha3.KubeConfigReference{SecretRef: v1alpha3.SecretKeyReference{Name: "remote-kubeconfig"}},
			AllowedNamespaces: &v1alpha3.NamespacePolicy{Names: []string{m.ns}}}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "no-secret"}, Spec: v1alpha3.ClusterProviderSpec{
			KubeConfig:        &v1alpha3.KubeConfigReference{SecretRef: v1alpha3.SecretKeyReference{Name: "absent"}},
			AllowedNamespaces: &v1alpha3.NamespacePolicy{Names: []string{m.ns}}}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "via-remote"}, Spec: v1alpha3.GitTargetSpec{
			ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "remote",
			ClusterProviderRef: &v1alpha3.ClusterProviderReference{Name: "remote"}}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "via-nothing"}, Spec: v1alpha3.GitTargetSpec{
			ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "nothing",
			ClusterProviderRef: &v1alpha3.ClusterProviderReference{Name: "no-secret"}}},
		watchRule(m.ns, "via-remote", "via-remote", "configmaps"),
		configMap(m.ns, "only-local", map[string]string{"k": "local"}),
	)
	startOperator(t)
	eventually(t, "the remote ConfigMap mirrored through the kubeconfig source", func() bool {
		return gitFile(t, m.repo, "remote/remote-source/configmaps/far-away.yaml") != ""
	})
	require.True(t, containsLine(gitFile(t, m.repo, "remote/remote-source/configmaps/far-away.yaml"), "  k: remote"))
	// The replay that wrote far-away.yaml listed every ConfigMap of the
	// source's namespace: none of the local cluster's is among them.
	mirrored, err := env.git.Git(m.repo, "ls-tree", "-r", "--name-only", "main", "remote/remote-source/configmaps/")
	require.NoError(t, err)
	require.Equal(t, []string{"remote/remote-source/configmaps/far-away.yaml"}, strings.Fields(mirrored),
		"only the remote cluster's ConfigMaps (the test control plane publishes no kube-root-ca.crt)")
	eventually(t, "the missing kubeconfig Secret explained", func() bool {
		c := targetCondition(t, m.ns, "via-nothing", v1alpha3.ConditionClusterProviderReady)
		return c != nil && c.Reason == v1alpha3.ReasonSecretNotFound
	})
}
