package rules_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

func TestNamespaceAllowed(t *testing.T) {
	prod := rules.NamespaceInfo{Name: "payments", Labels: map[string]string{"env": "prod"}}
	dev := rules.NamespaceInfo{Name: "sandbox", Labels: map[string]string{"env": "dev"}}
	bare := rules.NamespaceInfo{Name: "bare"}
	envIn := func(values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: values},
		}}
	}
	cases := []struct {
		name   string
		policy *v1alpha3.NamespacePolicy
		ns     rules.NamespaceInfo
		want   bool
	}{
		{name: "own namespace without policy", ns: rules.NamespaceInfo{Name: "team-a"}, want: true},
		{name: "own namespace despite a policy that excludes it",
			policy: &v1alpha3.NamespacePolicy{Selector: envIn("dev")}, ns: rules.NamespaceInfo{Name: "team-a"}, want: true},
		{name: "other namespace without policy", ns: prod},
		{name: "empty policy admits nothing", policy: &v1alpha3.NamespacePolicy{}, ns: prod},
		{name: "by name", policy: &v1alpha3.NamespacePolicy{Names: []string{"payments"}}, ns: prod, want: true},
		{name: "name not listed", policy: &v1alpha3.NamespacePolicy{Names: []string{"payments"}}, ns: dev},
		{name: "selector match", policy: &v1alpha3.NamespacePolicy{Selector: envIn("dev")}, ns: dev, want: true},
		{name: "selector mismatch", policy: &v1alpha3.NamespacePolicy{Selector: envIn("dev")}, ns: prod},
		{name: "selector on a namespace without labels", policy: &v1alpha3.NamespacePolicy{Selector: envIn("dev")}, ns: bare},
		{name: "empty selector admits every namespace",
			policy: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}, ns: bare, want: true},
		{name: "names or selector", policy: &v1alpha3.NamespacePolicy{Names: []string{"payments"}, Selector: envIn("dev")},
			ns: dev, want: true},
		{name: "invalid selector admits nothing", policy: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn}},
		}}, ns: dev},
		{name: "unnamed namespace", policy: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, rules.NamespaceAllowed(tc.policy, "team-a", tc.ns))
		})
	}
}
