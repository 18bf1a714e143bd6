package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// TestStatusOnlyChangeMakesNoCommit: a status write bumps the
// resourceVersion, but the desired state is unchanged.
func TestStatusOnlyChangeMakesNoCommit(t *testing.T) {
	m := newMirror(t, "status-only", "deployments")
	startOperator(t)
	waitReady(t, m.ns, m.target)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}},
	}}
	apply(t, d)
	path := m.path + "/status-only/apps/deployments/web.yaml"
	eventually(t, "the Deployment in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	commits := commitCount(t, m.repo)

	d.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1, ObservedGeneration: 1}
	require.NoError(t, env.kube.Client().Status().Update(context.Background(), d))
	// Then a real change, so the no-commit is observed behind a commit.
	apply(t, configMap(m.ns, "marker", nil))
	require.NoError(t, env.kube.Client().Update(context.Background(), withReplicas(t, m.ns, "web", 3)))
	eventually(t, "the replica change in Git", func() bool { return containsLine(gitFile(t, m.repo, path), "  replicas: 3") })
	require.Equal(t, commits+1, commitCount(t, m.repo), "only the spec change commits:\n%s", gitLog(t, m.repo))
	require.NotContains(t, gitFile(t, m.repo, path), "readyReplicas")
}

func withReplicas(t *testing.T, ns, name string, n int32) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	require.NoError(t, env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d))
	d.Spec.Replicas = &n
	return &d
}

// TestClusterScopedTypeLandsUnderCluster mirrors PriorityClasses through a
// ClusterWatchRule.
func TestClusterScopedTypeLandsUnderCluster(t *testing.T) {
	m := newMirror(t, "cluster-scope")
	apply(t, &v1alpha3.ClusterWatchRule{ObjectMeta: metav1.ObjectMeta{Name: "priorityclasses"},
		Spec: v1alpha3.ClusterWatchRuleSpec{TargetRef: v1alpha3.NamespacedTargetReference{Namespace: m.ns, Name: m.target},
			Rules: []v1alpha3.ClusterResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{
				APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}}}}}})
	apply(t, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch-low"}, Value: 100})
	startOperator(t)
	eventually(t, "the PriorityClass under _cluster/", func() bool {
		return containsLine(gitFile(t, m.repo, m.path+"/_cluster/scheduling.k8s.io/priorityclasses/batch-low.yaml"), "value: 100")
	})
}

// TestCRDCreatedAfterStartIsPickedUpByAWildcardRule: discovery follows a
// new CRD and a rule naming its group with resources "*" starts watching it.
func TestCRDCreatedAfterStartIsPickedUpByAWildcardRule(t *testing.T) {
	m := newMirror(t, "late-crd")
	apply(t, &v1alpha3.WatchRule{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "widgets"},
		Spec: v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: m.target},
			Rules: []v1alpha3.NamespacedResourceRule{{ResourceSelector: v1alpha3.ResourceSelector{
				APIGroups: []string{"late.example.com"}, Resources: []string{"*"}}}}}})
	startOperator(t)
	waitReady(t, m.ns, m.target)

	applyCRD(t, widgetCRD())
	createCustom(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "late.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": m.ns, "name": "gear"}, "spec": map[string]any{"size": int64(3)},
	}})
	eventually(t, "the Widget in Git", func() bool {
		return containsLine(gitFile(t, m.repo, m.path+"/late-crd/late.example.com/widgets/gear.yaml"), "  size: 3")
	})
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return namespacedCRD("late.example.com", "widget", "Widget")
}

// applyCRD creates a CRD and waits until it is served.
func applyCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	apply(t, crd)
	eventually(t, "CRD "+crd.Name+" served", func() bool {
		var got apiextensionsv1.CustomResourceDefinition
		err := env.kube.Client().Get(context.Background(), client.ObjectKey{Name: crd.Name}, &got)
		return err == nil && crdEstablished(&got)
	})
}

// createCustom creates a custom resource, retrying while its new type is
// not served by every API server path yet.
func createCustom(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	require.Eventually(t, func() bool { return env.kube.Client().Create(context.Background(), obj) == nil },
		10*time.Second, 200*time.Millisecond, "creating a %s", obj.GetKind())
}

// namespacedCRD is a namespaced type served at v1 that keeps any field.
func namespacedCRD(group, singular, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: singular + "s." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: singular + "s", Singular: singular, Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestRulesAndProvidersExplainThemselves: a rule naming something
// unservable says so; a working rule and the ClusterProvider are Ready.
func TestRulesAndProvidersExplainThemselves(t *testing.T) {
	m := newMirror(t, "explained", "configmaps")
	apply(t, watchRule(m.ns, "typo", m.target, "confgimaps"))
	startOperator(t)
	ruleCondition := func(name, typ string) *metav1.Condition {
		var wr v1alpha3.WatchRule
		if env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: name}, &wr) != nil {
			return nil
		}
		return meta.FindStatusCondition(wr.Status.Conditions, typ)
	}
	eventually(t, "the working rule is Ready", func() bool {
		c := ruleCondition("rule", v1alpha3.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	eventually(t, "the typo is explained", func() bool {
		c := ruleCondition("typo", v1alpha3.ConditionResourcesResolved)
		return c != nil && c.Reason == v1alpha3.ReasonResourcesUnresolved && strings.Contains(c.Message, "confgimaps")
	})
	eventually(t, "the ClusterProvider is Ready", func() bool {
		var cp v1alpha3.ClusterProvider
		return env.kube.Client().Get(context.Background(), client.ObjectKey{Name: "default"}, &cp) == nil &&
			meta.IsStatusConditionTrue(cp.Status.Conditions, v1alpha3.ConditionReady) && cp.Status.ServerVersion != ""
	})
}
