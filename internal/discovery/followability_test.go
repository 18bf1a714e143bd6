package discovery_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/configbutler/gitops-reverser/internal/discovery"
)

func TestFollowability(t *testing.T) {
	cases := []struct {
		name       string
		gr         schema.GroupResource
		verbs      []string
		followable bool
		reason     string
	}{
		{name: "core configmaps", gr: schema.GroupResource{Resource: "configmaps"}, verbs: watchableVerbs(), followable: true},
		{name: "crd with only read verbs", gr: schema.GroupResource{Group: "example.com", Resource: "widgets"},
			verbs: []string{"get", "list", "watch"}, followable: true},
		{name: "no watch", gr: schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"},
			verbs: []string{"get", "list"}, reason: "does not serve watch"},
		{name: "create only", gr: schema.GroupResource{Group: "example.com", Resource: "requests"},
			verbs: []string{"create"}, reason: "does not serve get, list, watch"},
		{name: "no verbs", gr: schema.GroupResource{Group: "example.com", Resource: "odd"}, reason: "does not serve get, list, watch"},
		{name: "core events despite full verbs", gr: schema.GroupResource{Resource: "events"}, verbs: watchableVerbs(),
			reason: "runtime-only: events are an operational log"},
		{name: "leases", gr: schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, verbs: watchableVerbs(),
			reason: "runtime-only: leases are heartbeats"},
		{name: "same resource name in another group is not runtime-only",
			gr: schema.GroupResource{Group: "example.com", Resource: "events"}, verbs: watchableVerbs(), followable: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			followable, reason := discovery.Followability(tc.gr, tc.verbs)
			require.Equal(t, tc.followable, followable)
			if tc.followable {
				require.Empty(t, reason)
				return
			}
			require.Contains(t, reason, tc.reason)
		})
	}
}

func TestEveryRuntimeOnlyResourceIsRefusedWithAReason(t *testing.T) {
	runtimeOnly := discovery.RuntimeOnlyResources()
	for _, gr := range []schema.GroupResource{
		{Resource: "events"}, {Group: "events.k8s.io", Resource: "events"},
		{Group: "coordination.k8s.io", Resource: "leases"}, {Group: "coordination.k8s.io", Resource: "leasecandidates"},
		{Resource: "endpoints"}, {Group: "discovery.k8s.io", Resource: "endpointslices"},
		{Resource: "nodes"}, {Resource: "componentstatuses"}, {Resource: "bindings"},
		{Group: "storage.k8s.io", Resource: "csinodes"}, {Group: "storage.k8s.io", Resource: "volumeattachments"},
		{Group: "internal.apiserver.k8s.io", Resource: "storageversions"},
		{Group: "resource.k8s.io", Resource: "resourceslices"},
		{Group: "authentication.k8s.io", Resource: "tokenreviews"},
		{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	} {
		require.Containsf(t, runtimeOnly, gr, "%s must be runtime-only", gr)
	}
	for gr, why := range runtimeOnly {
		require.NotEmptyf(t, why, "%s needs a reason", gr)
		followable, reason := discovery.Followability(gr, watchableVerbs())
		require.Falsef(t, followable, "%s must never be followed", gr)
		require.Equal(t, "runtime-only: "+why, reason)
	}

	delete(runtimeOnly, schema.GroupResource{Resource: "events"})
	require.Contains(t, discovery.RuntimeOnlyResources(), schema.GroupResource{Resource: "events"},
		"a caller cannot change the policy")
}

func TestIsControllerOwned(t *testing.T) {
	owner := func(controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "u1", Controller: controller}
	}
	cases := []struct {
		name   string
		owners []metav1.OwnerReference
		want   bool
	}{
		{name: "no owners"},
		{name: "owner without controller flag", owners: []metav1.OwnerReference{owner(nil)}},
		{name: "owner with controller false", owners: []metav1.OwnerReference{owner(ptr.To(false))}},
		{name: "controller owner", owners: []metav1.OwnerReference{owner(ptr.To(true))}, want: true},
		{name: "controller among plain owners", owners: []metav1.OwnerReference{owner(nil), owner(ptr.To(true))}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-abc", OwnerReferences: tc.owners}}
			require.Equal(t, tc.want, discovery.IsControllerOwned(pod))
		})
	}
}

func TestPolicyIsSensitive(t *testing.T) {
	secrets := schema.GroupResource{Resource: "secrets"}
	tokens := schema.GroupResource{Group: "example.com", Resource: "tokens"}
	require.True(t, discovery.Policy{}.IsSensitive(secrets))
	require.False(t, discovery.Policy{}.IsSensitive(tokens))
	require.False(t, discovery.Policy{}.IsSensitive(schema.GroupResource{Group: "example.com", Resource: "secrets"}),
		"only the core group's secrets are sensitive by default")
	policy := discovery.Policy{AdditionalSensitive: []schema.GroupResource{tokens}}
	require.True(t, policy.IsSensitive(tokens))
	require.True(t, policy.IsSensitive(secrets))
}
