package rules_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/discovery"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// typeSpec is a compact way to write one discovered type.
type typeSpec struct {
	gv         string
	resource   string
	kind       string
	namespaced bool
	preferred  bool
	verbs      []string
}

func fullVerbs() []string {
	return []string{"create", "delete", "get", "list", "patch", "update", "watch"}
}

// sourceTypes is the fixture source cluster. Verdicts come from the real
// discovery policy so the fixture cannot drift from it.
//
//   - core v1: namespaced configmaps, secrets, pods, events (runtime-only),
//     bindings (create only); cluster-scoped namespaces, persistentvolumes,
//     nodes (runtime-only);
//   - apps/v1 deployments; rbac roles and clusterroles;
//   - events.k8s.io/v1 events (runtime-only);
//   - metrics.k8s.io/v1beta1 pods and nodes, without watch;
//   - example.com widgets at v1 (preferred) and v1beta1, and cluster-scoped
//     gadgets only at v1beta1;
//   - other.io/v1 widgets, the same resource name in another group.
func sourceTypes() []discovery.TypeInfo {
	specs := []typeSpec{
		{gv: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true, preferred: true},
		{gv: "v1", resource: "secrets", kind: "Secret", namespaced: true, preferred: true},
		{gv: "v1", resource: "pods", kind: "Pod", namespaced: true, preferred: true},
		{gv: "v1", resource: "events", kind: "Event", namespaced: true, preferred: true},
		{gv: "v1", resource: "bindings", kind: "Binding", namespaced: true, preferred: true, verbs: []string{"create"}},
		{gv: "v1", resource: "namespaces", kind: "Namespace", preferred: true},
		{gv: "v1", resource: "persistentvolumes", kind: "PersistentVolume", preferred: true},
		{gv: "v1", resource: "nodes", kind: "Node", preferred: true},
		{gv: "apps/v1", resource: "deployments", kind: "Deployment", namespaced: true, preferred: true},
		{gv: "rbac.authorization.k8s.io/v1", resource: "roles", kind: "Role", namespaced: true, preferred: true},
		{gv: "rbac.authorization.k8s.io/v1", resource: "clusterroles", kind: "ClusterRole", preferred: true},
		{gv: "events.k8s.io/v1", resource: "events", kind: "Event", namespaced: true, preferred: true},
		{gv: "metrics.k8s.io/v1beta1", resource: "pods", kind: "PodMetrics", namespaced: true, preferred: true,
			verbs: []string{"get", "list"}},
		{gv: "metrics.k8s.io/v1beta1", resource: "nodes", kind: "NodeMetrics", preferred: true, verbs: []string{"get", "list"}},
		{gv: "example.com/v1", resource: "widgets", kind: "Widget", namespaced: true, preferred: true},
		{gv: "example.com/v1beta1", resource: "widgets", kind: "Widget", namespaced: true},
		{gv: "example.com/v1beta1", resource: "gadgets", kind: "Gadget", preferred: true},
		{gv: "other.io/v1", resource: "widgets", kind: "Widget", namespaced: true, preferred: true},
	}
	policy := discovery.Policy{}
	out := make([]discovery.TypeInfo, 0, len(specs))
	for _, s := range specs {
		gv, err := schema.ParseGroupVersion(s.gv)
		if err != nil {
			panic(err)
		}
		verbs := s.verbs
		if verbs == nil {
			verbs = fullVerbs()
		}
		gr := gv.WithResource(s.resource).GroupResource()
		followable, reason := discovery.Followability(gr, verbs)
		out = append(out, discovery.TypeInfo{
			GVR: gv.WithResource(s.resource), Kind: s.kind, Namespaced: s.namespaced, Verbs: verbs,
			Preferred: s.preferred, Followable: followable, Reason: reason, Sensitive: policy.IsSensitive(gr),
		})
	}
	return out
}

// sourceNamespaces is the fixture's namespace-label snapshot.
func sourceNamespaces() []rules.NamespaceInfo {
	return []rules.NamespaceInfo{
		{Name: "team-a", Labels: map[string]string{"env": "prod"}},
		{Name: "team-b", Labels: map[string]string{"env": "dev"}},
		{Name: "team-c", Labels: map[string]string{"env": "prod", "tier": "web"}},
		{Name: "team-d", Labels: map[string]string{"env": "dev"}},
		{Name: "kube-system"},
	}
}

// item builds a WatchRule item.
func item(sourceNamespace string, groups, versions, resources []string, ops ...v1alpha3.OperationType) v1alpha3.NamespacedResourceRule {
	return v1alpha3.NamespacedResourceRule{
		ResourceSelector: v1alpha3.ResourceSelector{Operations: ops, APIGroups: groups, APIVersions: versions, Resources: resources},
		SourceNamespace:  sourceNamespace,
	}
}

func watchRule(items ...v1alpha3.NamespacedResourceRule) *v1alpha3.WatchRule {
	return &v1alpha3.WatchRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rule"},
		Spec:       v1alpha3.WatchRuleSpec{TargetRef: v1alpha3.TargetReference{Name: "target"}, Rules: items},
	}
}

func gitTarget(policy *v1alpha3.NamespacePolicy) *v1alpha3.GitTarget {
	return &v1alpha3.GitTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "target"},
		Spec:       v1alpha3.GitTargetSpec{Path: "clusters/a", Branch: "main", AllowedSourceNamespaces: policy},
	}
}

func list(values ...string) []string { return values }

// claimStrings renders claims compactly as "group/version/resource
// namespace OPS", with "-" for cluster scope and C/U/D for operations.
func claimStrings(claims []rules.Claim) []string {
	var out []string
	for _, c := range claims {
		namespace := c.Namespace
		if namespace == "" {
			namespace = "-"
		}
		var ops strings.Builder
		for _, op := range c.Operations {
			ops.WriteString(string(op)[:1])
		}
		out = append(out, fmt.Sprintf("%s/%s %s %s", c.GVR.GroupVersion(), c.GVR.Resource, namespace, ops.String()))
	}
	return out
}

// requireMessages checks that got has one message per want, each containing
// its want substring, in order.
func requireMessages(t *testing.T, want, got []string) {
	t.Helper()
	require.Lenf(t, got, len(want), "messages: %q", got)
	for i := range want {
		require.Contains(t, got[i], want[i])
	}
}
