package rules_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

func claim(group, version, resource, namespace string, ops ...v1alpha3.OperationType) rules.Claim {
	return rules.Claim{
		GVR:       schema.GroupVersionResource{Group: group, Version: version, Resource: resource},
		Namespace: namespace, Operations: ops,
	}
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name    string
		results []rules.Result
		want    []string
	}{
		{name: "nothing", want: nil},
		{
			name: "operations are unioned per type and namespace",
			results: []rules.Result{
				{Claims: []rules.Claim{claim("", "v1", "configmaps", "team-a", "DELETE")}},
				{Claims: []rules.Claim{claim("", "v1", "configmaps", "team-a", "CREATE")}},
				{Claims: []rules.Claim{claim("", "v1", "configmaps", "team-a", "DELETE", "UPDATE")}},
			},
			want: []string{"v1/configmaps team-a CUD"},
		},
		{
			name: "different namespaces stay separate; versions of one resource merge",
			results: []rules.Result{
				{Claims: []rules.Claim{claim("", "v1", "configmaps", "team-b", "CREATE"), claim("example.com", "v1", "widgets", "team-a", "CREATE")}},
				{Claims: []rules.Claim{claim("", "v1", "configmaps", "team-a", "DELETE"), claim("example.com", "v1beta1", "widgets", "team-a", "DELETE")}},
			},
			want: []string{"v1/configmaps team-a D", "v1/configmaps team-b C", "example.com/v1/widgets team-a CD"},
		},
		{
			name: "a resource claimed at several versions is followed once, at the highest",
			results: []rules.Result{
				{Claims: []rules.Claim{claim("example.com", "v1alpha1", "widgets", "team-a", "UPDATE")}},
				{Claims: []rules.Claim{claim("example.com", "v2beta1", "widgets", "team-a", "CREATE")}},
				{Claims: []rules.Claim{claim("example.com", "v1", "widgets", "team-a", "DELETE")}},
			},
			want: []string{"example.com/v1/widgets team-a CUD"},
		},
		{
			name: "cluster-scoped claims merge too",
			results: []rules.Result{
				{Claims: []rules.Claim{claim("", "v1", "namespaces", "", "CREATE")}},
				{Claims: []rules.Claim{claim("", "v1", "namespaces", "", "UPDATE")}},
			},
			want: []string{"v1/namespaces - CU"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, claimStrings(rules.Merge(tc.results...)))
		})
	}
}

func TestMergeKeepsSensitivityAndDoesNotAliasInputs(t *testing.T) {
	secretsUpdate := claim("", "v1", "secrets", "team-a", "UPDATE")
	secretsUpdate.Sensitive = true
	first := rules.Result{Claims: []rules.Claim{secretsUpdate}}
	second := rules.Result{Claims: []rules.Claim{claim("", "v1", "secrets", "team-a", "CREATE")}}

	merged := rules.Merge(second, first)
	require.Len(t, merged, 1)
	require.True(t, merged[0].Sensitive, "a type is sensitive if any claim says so")
	require.Equal(t, []v1alpha3.OperationType{"CREATE", "UPDATE"}, merged[0].Operations)

	merged[0].Operations[0] = "DELETE"
	require.Equal(t, []v1alpha3.OperationType{"CREATE"}, second.Claims[0].Operations, "inputs are not modified")
}

func TestMergeOfCompiledRules(t *testing.T) {
	target := gitTarget(&v1alpha3.NamespacePolicy{Names: list("team-b")})
	fromWatchRule := rules.CompileWatchRule(
		watchRule(item("", list(""), nil, list("configmaps"), "CREATE"), item("team-b", list(""), nil, list("configmaps"))),
		target, sourceTypes(), sourceNamespaces())
	otherWatchRule := rules.CompileWatchRule(
		watchRule(item("", nil, nil, list("configmaps"), "DELETE")), target, sourceTypes(), sourceNamespaces())
	fromClusterRule := rules.CompileClusterWatchRule(clusterRule(clusterItem("", list(""), list("namespaces"))), sourceTypes())

	require.Equal(t, []string{"v1/configmaps team-a CD", "v1/configmaps team-b CUD", "v1/namespaces - CUD"},
		claimStrings(rules.Merge(fromWatchRule, otherWatchRule, fromClusterRule)))
}
