package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestAClusterProviderWithAKubeconfigMirrorsThroughIt: a source selected by
// a kubeconfig Secret in the operator namespace (here pointing at the same
// API server) mirrors like the local one, and a missing Secret says so.
func TestAClusterProviderWithAKubeconfigMirrorsThroughIt(t *testing.T) {
	m := newMirror(t, "remote-source")
	kubeconfig, err := env.kube.Kubeconfig()
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
		configMap(m.ns, "far-away", map[string]string{"k": "v"}),
	)
	startOperator(t)
	eventually(t, "the ConfigMap mirrored through the kubeconfig source", func() bool {
		return gitFile(t, m.repo, "remote/remote-source/configmaps/far-away.yaml") != ""
	})
	eventually(t, "the missing kubeconfig Secret explained", func() bool {
		c := targetCondition(t, m.ns, "via-nothing", v1alpha3.ConditionClusterProviderReady)
		return c != nil && c.Reason == v1alpha3.ReasonSecretNotFound
	})
}
