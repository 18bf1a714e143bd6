package observer

import (
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

func claim(group, version, resource, namespace string, ops ...v1alpha3.OperationType) rules.Claim {
	return rules.Claim{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, Namespace: namespace, Operations: ops}
}

func TestWebhooksFollowTheClaims(t *testing.T) {
	all := []v1alpha3.OperationType{v1alpha3.OperationCreate, v1alpha3.OperationUpdate, v1alpha3.OperationDelete}
	claims := []rules.Claim{
		claim("apps", "v1", "deployments", "team-b", all...),
		claim("", "v1", "configmaps", "team-a", v1alpha3.OperationCreate),
		claim("", "v1", "configmaps", "team-b", v1alpha3.OperationUpdate),
		claim("", "v1", "namespaces", "", all...),
	}
	service := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: "gitops-reverser", Name: "gitops-reverser-webhook"}}
	scalable := func(gvr schema.GroupVersionResource) bool { return gvr.Resource == "deployments" }
	got := Webhooks(claims, WebhookSpec{ClientConfig: service, Scalable: scalable})
	require.Len(t, got, 2)

	namespaced, cluster := got[0], got[1]
	require.Equal(t, WebhookNamespaced, namespaced.Name)
	require.Equal(t, []string{"team-a", "team-b"}, namespaced.NamespaceSelector.MatchExpressions[0].Values)
	require.Equal(t, admissionregistrationv1.Ignore, *namespaced.FailurePolicy)
	require.Equal(t, admissionregistrationv1.SideEffectClassNone, *namespaced.SideEffects)
	require.Equal(t, int32(2), *namespaced.TimeoutSeconds)
	require.Equal(t, []string{"v1"}, namespaced.AdmissionReviewVersions)
	require.Equal(t, Path, *namespaced.ClientConfig.Service.Path)
	require.Nil(t, service.Service.Path, "the spec's client config is left alone")

	type rule struct {
		resource string
		ops      []admissionregistrationv1.OperationType
	}
	var rs []rule
	for _, r := range namespaced.Rules {
		require.Equal(t, admissionregistrationv1.NamespacedScope, *r.Scope)
		rs = append(rs, rule{r.Resources[0], r.Operations})
	}
	cu := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	require.Equal(t, []rule{
		{"configmaps", cu}, // the union of what the two namespaces follow
		{"deployments", []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}},
		{"deployments/scale", []admissionregistrationv1.OperationType{admissionregistrationv1.Update}},
	}, rs)

	require.Equal(t, WebhookCluster, cluster.Name)
	require.Nil(t, cluster.NamespaceSelector, "a Namespace is matched on its own labels: no selector")
	require.Len(t, cluster.Rules, 1)
	require.Equal(t, []string{"namespaces"}, cluster.Rules[0].Resources)
	require.Equal(t, admissionregistrationv1.ClusterScope, *cluster.Rules[0].Scope)
}

func TestWebhooksOfNothingAreNone(t *testing.T) {
	url := "https://127.0.0.1:9443" + Path
	require.Empty(t, Webhooks(nil, WebhookSpec{ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}))
}

func TestAScaleIsRegisteredOnlyWhenUpdatesAreFollowed(t *testing.T) {
	got := Webhooks([]rules.Claim{claim("apps", "v1", "deployments", "a", v1alpha3.OperationCreate)},
		WebhookSpec{Scalable: func(schema.GroupVersionResource) bool { return true }})
	require.Len(t, got[0].Rules, 1)
	require.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}}}, got[0].NamespaceSelector)
}
