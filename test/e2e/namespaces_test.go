package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestAllowedSourceNamespacesByNameAndBySelector: a "*" rule mirrors the
// target's own namespace, the names and the label-selected namespaces its
// GitTarget admits, and nothing else; labelling a namespace later admits it.
func TestAllowedSourceNamespacesByNameAndBySelector(t *testing.T) {
	m := newMirror(t, "ns-policy")
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-exact"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-labelled", Labels: map[string]string{"mirror": "yes"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-denied"}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "wide"}, Spec: v1alpha3.GitTargetSpec{
			ProviderRef: v1alpha3.GitProviderReference{Name: "repo"}, Branch: "main", Path: "wide",
			AllowedSourceNamespaces: &v1alpha3.NamespacePolicy{Names: []string{"ns-exact"},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"mirror": "yes"}}},
		}},
		&v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "everywhere"}, Spec: v1alpha3.WatchRuleSpec{
			TargetRef: v1alpha3.TargetReference{Name: "wide"},
			Rules:     []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{Resources: []string{"configmaps"}}, SourceNamespace: "*"}},
		}},
	)
	for _, ns := range []string{m.ns, "ns-exact", "ns-labelled", "ns-denied"} {
		apply(t, configMap(ns, "probe", map[string]string{"ns": ns}))
	}
	startOperator(t)
	for _, ns := range []string{m.ns, "ns-exact", "ns-labelled"} {
		eventually(t, "the ConfigMap of "+ns+" in Git", func() bool {
			return gitFile(t, m.repo, "wide/"+ns+"/configmaps/probe.yaml") != ""
		})
	}
	waitReady(t, m.ns, "wide")
	require.Empty(t, gitFile(t, m.repo, "wide/ns-denied/configmaps/probe.yaml"), "a namespace the policy does not admit is not mirrored")

	var denied corev1.Namespace
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Name: "ns-denied"}, &denied))
	denied.Labels = map[string]string{"mirror": "yes"}
	require.NoError(t, env.kube.Client().Update(context.Background(), &denied))
	eventually(t, "the newly labelled namespace mirrored", func() bool {
		return gitFile(t, m.repo, "wide/ns-denied/configmaps/probe.yaml") != ""
	})
}
