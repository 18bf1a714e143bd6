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
)

// TestDeclaredPlacementDecidesWhereNewFilesGo: ConfigMaps follow their
// byType template, ServiceAccounts the bundling default (one
// multi-document file per namespace), and a placement change applies to
// new objects only: the file already in Git is edited where it is.
func TestDeclaredPlacementDecidesWhereNewFilesGo(t *testing.T) {
	m := newMirror(t, "placement", "configmaps", "serviceaccounts")
	setPlacement(t, m, &v1alpha3.PlacementSpec{
		ByType:  map[string]v1alpha3.PathTemplate{"v1/configmaps": "{namespace}/config/{name}.yaml"},
		Default: "{namespace}/{resource}.yaml",
	})
	apply(t,
		configMap(m.ns, "app", map[string]string{"k": "1"}),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "robot-a"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "robot-b"}},
	)
	startOperator(t)
	bundle := m.path + "/placement/serviceaccounts.yaml"
	eventually(t, "the placed files in Git", func() bool {
		accounts := gitFile(t, m.repo, bundle)
		return gitFile(t, m.repo, m.path+"/placement/config/app.yaml") != "" &&
			strings.Contains(accounts, "name: robot-a") && strings.Contains(accounts, "name: robot-b")
	})
	require.True(t, containsLine(gitFile(t, m.repo, bundle), "---"), "two objects in one file are two documents")
	require.Empty(t, gitFile(t, m.repo, m.path+"/placement/configmaps/app.yaml"), "nothing at the canonical path")

	setPlacement(t, m, &v1alpha3.PlacementSpec{
		ByType: map[string]v1alpha3.PathTemplate{"v1/configmaps": "{namespace}/cm-{name}.yml"},
	})
	ctx := context.Background()
	var cm corev1.ConfigMap
	require.NoError(t, env.kube.Client().Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "app"}, &cm))
	cm.Data["k"] = "2"
	require.NoError(t, env.kube.Client().Update(ctx, &cm))
	apply(t, configMap(m.ns, "later", map[string]string{"k": "1"}),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "robot-c"}})
	eventually(t, "the new placement for new objects, the old file edited in place", func() bool {
		return containsLine(gitFile(t, m.repo, m.path+"/placement/config/app.yaml"), `  k: "2"`) &&
			gitFile(t, m.repo, m.path+"/placement/cm-later.yml") != "" &&
			gitFile(t, m.repo, m.path+"/placement/serviceaccounts/robot-c.yaml") != ""
	})
	require.Empty(t, gitFile(t, m.repo, m.path+"/placement/cm-app.yml"), "an existing file never moves:\n%s", gitLog(t, m.repo))
	require.NotContains(t, gitFile(t, m.repo, bundle), "robot-c")
}

// setPlacement sets the target's spec.placement and waits until the
// operator, when running, has reconciled it: the worker then knows the
// policy before any later write reaches it.
func setPlacement(t *testing.T, m mirrorSetup, placement *v1alpha3.PlacementSpec) {
	t.Helper()
	gt := v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: m.target}}
	running := false
	edit(t, &gt, func() {
		running = gt.Status.ObservedGeneration != 0
		gt.Spec.Placement = placement
	})
	if !running {
		return
	}
	eventually(t, "the placement reconciled", func() bool {
		c := targetCondition(t, m.ns, m.target, v1alpha3.ConditionReady)
		return c != nil && c.ObservedGeneration == gt.Generation && c.Status == metav1.ConditionTrue
	})
}
