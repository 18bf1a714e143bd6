package rules_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// resolveCase is a WatchRule whose items all use the fixture target
// (no allowedSourceNamespaces), so only resource resolution varies.
type resolveCase struct {
	name           string
	items          []v1alpha3.NamespacedResourceRule
	wantClaims     []string
	wantUnresolved []string
}

func runResolveCases(t *testing.T, cases []resolveCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rules.CompileWatchRule(watchRule(tc.items...), gitTarget(nil), sourceTypes(), sourceNamespaces())
			require.Equal(t, tc.wantClaims, claimStrings(got.Claims))
			requireMessages(t, tc.wantUnresolved, got.Unresolved)
			require.Empty(t, got.Unauthorized)
		})
	}
}

// TestCompileWatchRuleGroupsAndVersions covers named, omitted and wildcard
// groups and versions for named resources.
func TestCompileWatchRuleGroupsAndVersions(t *testing.T) {
	runResolveCases(t, []resolveCase{
		{
			name:       "core group named, preferred version",
			items:      []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("configmaps"))},
			wantClaims: list("v1/configmaps team-a CUD"),
		},
		{
			name:       "groups omitted resolves across groups and skips unusable duplicates",
			items:      []v1alpha3.NamespacedResourceRule{item("", nil, nil, list("pods"))},
			wantClaims: list("v1/pods team-a CUD"),
		},
		{
			name:       "groups omitted claims the name in every group that serves it",
			items:      []v1alpha3.NamespacedResourceRule{item("", nil, nil, list("widgets"))},
			wantClaims: list("example.com/v1/widgets team-a CUD", "other.io/v1/widgets team-a CUD"),
		},
		{
			name:       "group wildcard with a named resource behaves like omitted groups",
			items:      []v1alpha3.NamespacedResourceRule{item("", list("*"), nil, list("widgets"))},
			wantClaims: list("example.com/v1/widgets team-a CUD", "other.io/v1/widgets team-a CUD"),
		},
		{
			name:       "a named non-preferred version",
			items:      []v1alpha3.NamespacedResourceRule{item("", list("example.com"), list("v1beta1"), list("widgets"))},
			wantClaims: list("example.com/v1beta1/widgets team-a CUD"),
		},
		{
			name:       "several named versions follow the resource once, at the highest",
			items:      []v1alpha3.NamespacedResourceRule{item("", list("example.com"), list("v1", "v1beta1"), list("widgets"))},
			wantClaims: list("example.com/v1/widgets team-a CUD"),
		},
		{
			name:       "version wildcard follows the resource once, at its highest served version",
			items:      []v1alpha3.NamespacedResourceRule{item("", list("example.com"), list("*"), list("widgets"))},
			wantClaims: list("example.com/v1/widgets team-a CUD"),
		},
		{
			name:       "a named version that is not served",
			items:      []v1alpha3.NamespacedResourceRule{item("", list("example.com"), list("v1", "v2"), list("widgets"))},
			wantClaims: list("example.com/v1/widgets team-a CUD"),
			wantUnresolved: list(`rules[0]: resource "widgets" is not served at version "v2" ` +
				`(served as example.com/v1, example.com/v1beta1)`),
		},
		{
			name:       "groups and resources are a satisfiable cross product",
			items:      []v1alpha3.NamespacedResourceRule{item("", list("", "apps"), nil, list("configmaps", "deployments"))},
			wantClaims: list("v1/configmaps team-a CUD", "apps/v1/deployments team-a CUD"),
		},
	})
}

// TestCompileWatchRuleWildcardResources covers resources "*": every usable
// type, unusable ones skipped silently.
func TestCompileWatchRuleWildcardResources(t *testing.T) {
	runResolveCases(t, []resolveCase{
		{
			name:       "resource wildcard in one group",
			items:      []v1alpha3.NamespacedResourceRule{item("", list("apps"), nil, list("*"))},
			wantClaims: list("apps/v1/deployments team-a CUD"),
		},
		{
			name:       "resource wildcard in core skips runtime-only, create-only and cluster-scoped types",
			items:      []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("*"))},
			wantClaims: list("v1/configmaps team-a CUD", "v1/pods team-a CUD", "v1/secrets team-a CUD"),
		},
		{
			name:  "everything: every followable namespaced type at its preferred version",
			items: []v1alpha3.NamespacedResourceRule{item("", list("*"), nil, list("*"))},
			wantClaims: list("v1/configmaps team-a CUD", "v1/pods team-a CUD", "v1/secrets team-a CUD",
				"apps/v1/deployments team-a CUD", "example.com/v1/widgets team-a CUD",
				"other.io/v1/widgets team-a CUD", "rbac.authorization.k8s.io/v1/roles team-a CUD"),
		},
		{
			name:       "everything at a named version",
			items:      []v1alpha3.NamespacedResourceRule{item("", list("*"), list("v1beta1"), list("*"))},
			wantClaims: list("example.com/v1beta1/widgets team-a CUD"),
		},
		{
			name:           "everything at a version nobody serves",
			items:          []v1alpha3.NamespacedResourceRule{item("", list("*"), list("v9"), list("*"))},
			wantUnresolved: list(`rules[0]: version "v9" is not served by any API group`),
		},
		{
			name:           "a named group that does not serve a named version, with wildcard resources",
			items:          []v1alpha3.NamespacedResourceRule{item("", list("apps"), list("v1beta1"), list("*"))},
			wantUnresolved: list(`rules[0]: version "v1beta1" is not served by API group "apps"`),
		},
		{
			name:           "wildcard plus a named unusable resource",
			items:          []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("*", "events", "configmaps"))},
			wantClaims:     list("v1/configmaps team-a CUD", "v1/pods team-a CUD", "v1/secrets team-a CUD"),
			wantUnresolved: list(`rules[0]: "v1/events" is not followable`),
		},
	})
}

// TestCompileWatchRuleUnresolved covers what fails closed: every message
// names the item and why nothing was claimed for it.
func TestCompileWatchRuleUnresolved(t *testing.T) {
	runResolveCases(t, []resolveCase{
		{
			name:  "a named resource that is runtime-only everywhere",
			items: []v1alpha3.NamespacedResourceRule{item("", nil, nil, list("events"))},
			wantUnresolved: list(`rules[0]: "v1/events" is not followable: runtime-only: events`,
				`rules[0]: "events.k8s.io/v1/events" is not followable: runtime-only: events`),
		},
		{
			name:           "a named resource without watch",
			items:          []v1alpha3.NamespacedResourceRule{item("", list("metrics.k8s.io"), nil, list("pods"))},
			wantUnresolved: list(`rules[0]: "metrics.k8s.io/v1beta1/pods" is not followable: does not serve watch`),
		},
		{
			name:           "a named create-only resource",
			items:          []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("bindings"))},
			wantUnresolved: list(`rules[0]: "v1/bindings" is not followable: runtime-only: bindings`),
		},
		{
			name:           "a cluster-scoped resource in a WatchRule",
			items:          []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("namespaces"))},
			wantUnresolved: list(`rules[0]: "v1/namespaces" is cluster-scoped; use a ClusterWatchRule`),
		},
		{
			name:           "a resource nobody serves",
			items:          []v1alpha3.NamespacedResourceRule{item("", nil, nil, list("flurbs"))},
			wantUnresolved: list(`rules[0]: resource "flurbs" is not served by any API group`),
		},
		{
			name:           "a resource the named group does not serve",
			items:          []v1alpha3.NamespacedResourceRule{item("", list("apps"), nil, list("configmaps"))},
			wantUnresolved: list(`rules[0]: resource "configmaps" is not served by API group "apps"`),
		},
		{
			name:           "a group that is not served",
			items:          []v1alpha3.NamespacedResourceRule{item("", list("nope.io"), nil, list("things", "*"))},
			wantUnresolved: list(`rules[0]: API group "nope.io" is not served`),
		},
		{
			name:           "a served and an unserved group",
			items:          []v1alpha3.NamespacedResourceRule{item("", list("", "nope.io"), nil, list("configmaps"))},
			wantClaims:     list("v1/configmaps team-a CUD"),
			wantUnresolved: list(`rules[0]: API group "nope.io" is not served`),
		},
		{
			name:           "kubectl-style resource.group gets a hint",
			items:          []v1alpha3.NamespacedResourceRule{item("", nil, nil, list("deployments.apps"))},
			wantUnresolved: list(`put its group in apiGroups`),
		},
		{
			name:           "a subresource",
			items:          []v1alpha3.NamespacedResourceRule{item("", list("apps"), nil, list("deployments/scale"))},
			wantUnresolved: list(`rules[0]: subresource "deployments/scale" cannot be mirrored`),
		},
		{
			name:           "an item without resources claims nothing",
			items:          []v1alpha3.NamespacedResourceRule{item("", list("*"), nil, nil)},
			wantUnresolved: list(`rules[0]: names no resources`),
		},
		{
			name: "later items are reported by their index",
			items: []v1alpha3.NamespacedResourceRule{
				item("", list(""), nil, list("configmaps")), item("", list(""), nil, list("nodes")),
			},
			wantClaims:     list("v1/configmaps team-a CUD"),
			wantUnresolved: list(`rules[1]: "v1/nodes" is not followable: runtime-only: nodes`),
		},
	})
}

func TestCompileWatchRuleOperations(t *testing.T) {
	cases := []struct {
		name           string
		items          []v1alpha3.NamespacedResourceRule
		wantClaims     []string
		wantUnresolved []string
	}{
		{
			name:       "one operation",
			items:      []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("configmaps"), "CREATE")},
			wantClaims: list("v1/configmaps team-a C"),
		},
		{
			name:       "duplicates and order are normalized",
			items:      []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("configmaps"), "DELETE", "CREATE", "DELETE")},
			wantClaims: list("v1/configmaps team-a CD"),
		},
		{
			name:       "wildcard among operations is all",
			items:      []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("configmaps"), "UPDATE", "*")},
			wantClaims: list("v1/configmaps team-a CUD"),
		},
		{
			name: "items claiming the same type union their operations",
			items: []v1alpha3.NamespacedResourceRule{
				item("", list(""), nil, list("configmaps"), "CREATE"),
				item("", nil, nil, list("configmaps", "secrets"), "DELETE"),
			},
			wantClaims: list("v1/configmaps team-a CD", "v1/secrets team-a D"),
		},
		{
			name:           "an unknown operation claims nothing for its item",
			items:          []v1alpha3.NamespacedResourceRule{item("", list(""), nil, list("configmaps"), "PATCH")},
			wantUnresolved: list(`rules[0]: operation "PATCH" is not one of CREATE, UPDATE, DELETE or *`),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rules.CompileWatchRule(watchRule(tc.items...), gitTarget(nil), sourceTypes(), sourceNamespaces())
			require.Equal(t, tc.wantClaims, claimStrings(got.Claims))
			requireMessages(t, tc.wantUnresolved, got.Unresolved)
		})
	}
}

func TestCompileWatchRuleSourceNamespaces(t *testing.T) {
	devSelector := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
	cases := []struct {
		name             string
		policy           *v1alpha3.NamespacePolicy
		sourceNamespaces []string // one configmaps item per entry
		wantNamespaces   []string
		wantUnauthorized []string
	}{
		{name: "omitted is the rule's own namespace", sourceNamespaces: list(""), wantNamespaces: list("team-a")},
		{name: "own namespace named explicitly", sourceNamespaces: list("team-a"), wantNamespaces: list("team-a")},
		{name: "no policy admits only the own namespace", sourceNamespaces: list("team-b"), wantUnauthorized: list("team-b")},
		{name: "an empty policy admits nothing", policy: &v1alpha3.NamespacePolicy{},
			sourceNamespaces: list("team-b"), wantUnauthorized: list("team-b")},
		{name: "admitted by name", policy: &v1alpha3.NamespacePolicy{Names: list("team-b")},
			sourceNamespaces: list("team-b"), wantNamespaces: list("team-b")},
		{name: "admitted by name even when missing from the snapshot",
			policy: &v1alpha3.NamespacePolicy{Names: list("ghost")}, sourceNamespaces: list("ghost"), wantNamespaces: list("ghost")},
		{name: "admitted by selector", policy: &v1alpha3.NamespacePolicy{Selector: devSelector},
			sourceNamespaces: list("team-b"), wantNamespaces: list("team-b")},
		{name: "refused by selector", policy: &v1alpha3.NamespacePolicy{Selector: devSelector},
			sourceNamespaces: list("team-c"), wantUnauthorized: list("team-c")},
		{name: "a selector never admits a namespace with unknown labels",
			policy:           &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}},
			sourceNamespaces: list("ghost"), wantUnauthorized: list("ghost")},
		{name: "wildcard with no policy is the own namespace", sourceNamespaces: list("*"), wantNamespaces: list("team-a")},
		{name: "wildcard expands to the namespaces a selector admits, own included",
			policy: &v1alpha3.NamespacePolicy{Selector: devSelector}, sourceNamespaces: list("*"),
			wantNamespaces: list("team-a", "team-b", "team-d")},
		{name: "wildcard with names expands only to known namespaces",
			policy:           &v1alpha3.NamespacePolicy{Names: list("team-c", "ghost")},
			sourceNamespaces: list("*"), wantNamespaces: list("team-a", "team-c")},
		{name: "wildcard with an empty selector is every known namespace",
			policy: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}, sourceNamespaces: list("*"),
			wantNamespaces: list("kube-system", "team-a", "team-b", "team-c", "team-d")},
		{name: "wildcard with names and a selector",
			policy: &v1alpha3.NamespacePolicy{Names: list("kube-system"), Selector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}},
			}},
			sourceNamespaces: list("*"), wantNamespaces: list("kube-system", "team-a", "team-c")},
		{name: "an invalid selector admits nothing",
			policy: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}},
			}},
			sourceNamespaces: list("*", "team-b"), wantNamespaces: list("team-a"), wantUnauthorized: list("team-b")},
		{name: "authorized and unauthorized items",
			policy:           &v1alpha3.NamespacePolicy{Names: list("team-b")},
			sourceNamespaces: list("team-b", "team-d", "team-c", "team-d"),
			wantNamespaces:   list("team-b"), wantUnauthorized: list("team-c", "team-d")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var items []v1alpha3.NamespacedResourceRule
			for _, ns := range tc.sourceNamespaces {
				items = append(items, item(ns, list(""), nil, list("configmaps")))
			}
			got := rules.CompileWatchRule(watchRule(items...), gitTarget(tc.policy), sourceTypes(), sourceNamespaces())
			var namespaces []string
			for _, c := range got.Claims {
				require.Equal(t, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, c.GVR)
				namespaces = append(namespaces, c.Namespace)
			}
			require.Equal(t, tc.wantNamespaces, namespaces)
			require.Equal(t, tc.wantUnauthorized, got.Unauthorized)
			require.Empty(t, got.Unresolved)
		})
	}
}

func TestCompileWatchRuleClaimCarriesTypeFacts(t *testing.T) {
	got := rules.CompileWatchRule(
		watchRule(item("*", list(""), nil, list("secrets"), "UPDATE")),
		gitTarget(&v1alpha3.NamespacePolicy{Names: list("team-b")}), sourceTypes(), sourceNamespaces())
	require.Equal(t, []rules.Claim{
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespace: "team-a",
			Sensitive: true, Operations: []v1alpha3.OperationType{v1alpha3.OperationUpdate}},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespace: "team-b",
			Sensitive: true, Operations: []v1alpha3.OperationType{v1alpha3.OperationUpdate}},
	}, got.Claims)
}

func TestCompileWatchRuleWithoutNamespaceClaimsNothing(t *testing.T) {
	rule := watchRule(item("", list(""), nil, list("configmaps")), item("*", list(""), nil, list("configmaps")))
	rule.Namespace = ""
	got := rules.CompileWatchRule(rule, gitTarget(&v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}),
		sourceTypes(), sourceNamespaces())
	require.Empty(t, got.Claims, "a namespaced type must never be claimed cluster-wide")
}

func TestCompileIsDeterministic(t *testing.T) {
	rule := watchRule(
		item("*", list("*"), nil, list("*")),
		item("", nil, nil, list("events", "flurbs", "widgets"), "DELETE"),
		item("team-c", list(""), nil, list("configmaps")),
	)
	target := gitTarget(&v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}})
	want := rules.CompileWatchRule(rule, target, sourceTypes(), sourceNamespaces())
	require.NotEmpty(t, want.Claims)
	require.NotEmpty(t, want.Unresolved)
	require.NotEmpty(t, want.Unauthorized)

	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		types, namespaces := sourceTypes(), sourceNamespaces()
		rng.Shuffle(len(types), func(i, j int) { types[i], types[j] = types[j], types[i] })
		rng.Shuffle(len(namespaces), func(i, j int) { namespaces[i], namespaces[j] = namespaces[j], namespaces[i] })
		require.Equal(t, want, rules.CompileWatchRule(rule, target, types, namespaces))
	}
}

func clusterRule(items ...v1alpha3.ClusterResourceRule) *v1alpha3.ClusterWatchRule {
	return &v1alpha3.ClusterWatchRule{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-rule"},
		Spec: v1alpha3.ClusterWatchRuleSpec{
			TargetRef: v1alpha3.NamespacedTargetReference{Namespace: "team-a", Name: "target"}, Rules: items,
		},
	}
}

func clusterItem(scope string, groups, resources []string, ops ...v1alpha3.OperationType) v1alpha3.ClusterResourceRule {
	return v1alpha3.ClusterResourceRule{
		ResourceSelector: v1alpha3.ResourceSelector{Operations: ops, APIGroups: groups, Resources: resources},
		Scope:            scope,
	}
}

func TestCompileClusterWatchRule(t *testing.T) {
	cases := []struct {
		name           string
		items          []v1alpha3.ClusterResourceRule
		wantClaims     []string
		wantUnresolved []string
	}{
		{
			name:       "a cluster-scoped core type",
			items:      []v1alpha3.ClusterResourceRule{clusterItem("", list(""), list("namespaces"))},
			wantClaims: list("v1/namespaces - CUD"),
		},
		{
			name:       "scope Cluster is accepted",
			items:      []v1alpha3.ClusterResourceRule{clusterItem("Cluster", list(""), list("namespaces"), "DELETE")},
			wantClaims: list("v1/namespaces - D"),
		},
		{
			name:  "everything cluster-scoped and followable",
			items: []v1alpha3.ClusterResourceRule{clusterItem("", list("*"), list("*"))},
			wantClaims: list("v1/namespaces - CUD", "v1/persistentvolumes - CUD",
				"example.com/v1beta1/gadgets - CUD", "rbac.authorization.k8s.io/v1/clusterroles - CUD"),
		},
		{
			name:       "preferred version of a resource absent from the group's preferred version",
			items:      []v1alpha3.ClusterResourceRule{clusterItem("", nil, list("gadgets"))},
			wantClaims: list("example.com/v1beta1/gadgets - CUD"),
		},
		{
			name:           "a namespaced type",
			items:          []v1alpha3.ClusterResourceRule{clusterItem("", list(""), list("configmaps"))},
			wantUnresolved: list(`rules[0]: "v1/configmaps" is namespaced; use a WatchRule`),
		},
		{
			name:           "runtime-only nodes",
			items:          []v1alpha3.ClusterResourceRule{clusterItem("", nil, list("nodes"))},
			wantUnresolved: list(`"v1/nodes" is not followable: runtime-only`, `"metrics.k8s.io/v1beta1/nodes" is not followable`),
		},
		{
			name: "a stored Namespaced scope is refused",
			items: []v1alpha3.ClusterResourceRule{
				clusterItem("Namespaced", list(""), list("namespaces")), clusterItem("", list("rbac.authorization.k8s.io"), list("clusterroles")),
			},
			wantClaims:     list("rbac.authorization.k8s.io/v1/clusterroles - CUD"),
			wantUnresolved: list(`rules[0]: scope "Namespaced" is not accepted`),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rules.CompileClusterWatchRule(clusterRule(tc.items...), sourceTypes())
			require.Equal(t, tc.wantClaims, claimStrings(got.Claims))
			requireMessages(t, tc.wantUnresolved, got.Unresolved)
			require.Empty(t, got.Unauthorized)
		})
	}
}
