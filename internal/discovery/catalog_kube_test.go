package discovery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sdiscovery "k8s.io/client-go/discovery"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/discovery"
)

func newKubeCatalog(t *testing.T, clock *clocktesting.FakeClock) (*discovery.Catalog, *k8sdiscovery.DiscoveryClient) {
	t.Helper()
	discoveryClient, err := k8sdiscovery.NewDiscoveryClientForConfig(kube.Config())
	require.NoError(t, err)
	return &discovery.Catalog{Discovery: discoveryClient, Clock: clock, Grace: 2 * time.Minute}, discoveryClient
}

func TestKubeCatalogDescribesTheRealAPISurface(t *testing.T) {
	c, _ := newKubeCatalog(t, clocktesting.NewFakeClock(time.Now()))
	require.NoError(t, c.Refresh(context.Background()))

	configMaps := lookup(t, c, gvr("", "v1", "configmaps"))
	require.True(t, configMaps.Followable && configMaps.Preferred && configMaps.Namespaced)
	require.Equal(t, "ConfigMap", configMaps.Kind)
	require.True(t, lookup(t, c, gvr("", "v1", "secrets")).Sensitive)

	namespaces := lookup(t, c, gvr("", "v1", "namespaces"))
	require.True(t, namespaces.Followable)
	require.False(t, namespaces.Namespaced)

	for _, runtimeOnly := range []schema.GroupVersionResource{
		gvr("", "v1", "events"), gvr("events.k8s.io", "v1", "events"), gvr("coordination.k8s.io", "v1", "leases"),
		gvr("", "v1", "endpoints"), gvr("discovery.k8s.io", "v1", "endpointslices"), gvr("", "v1", "nodes"),
		gvr("authentication.k8s.io", "v1", "tokenreviews"), gvr("authorization.k8s.io", "v1", "subjectaccessreviews"),
	} {
		info := lookup(t, c, runtimeOnly)
		require.Falsef(t, info.Followable, "%s must not be followable", runtimeOnly)
		require.Truef(t, strings.HasPrefix(info.Reason, "runtime-only: "), "%s: %s", runtimeOnly, info.Reason)
	}

	// The operator's own CRDs, installed by the harness.
	watchRules := lookup(t, c, gvr("configbutler.ai", "v1alpha3", "watchrules"))
	require.True(t, watchRules.Followable && watchRules.Preferred && watchRules.Namespaced)
	clusterWatchRules := lookup(t, c, gvr("configbutler.ai", "v1alpha3", "clusterwatchrules"))
	require.False(t, clusterWatchRules.Namespaced)

	preferredPerResource := map[schema.GroupResource]int{}
	for _, info := range c.Types() {
		require.NotContainsf(t, info.GVR.Resource, "/", "subresource %s listed as a type", info.GVR)
		if info.Preferred {
			preferredPerResource[info.GVR.GroupResource()]++
		}
	}
	for gr, n := range preferredPerResource {
		require.Equalf(t, 1, n, "%s has %d preferred versions", gr, n)
	}
}

// gizmoCRD serves v1 (storage) and v1beta1, and defines v1alpha1 unserved.
func gizmoCRD() *apiextensionsv1.CustomResourceDefinition {
	schemaProps := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr.To(true),
	}}
	version := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage, Schema: schemaProps}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.discoverytest.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "discoverytest.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				version("v1alpha1", false, false), version("v1beta1", true, false), version("v1", true, true),
			},
		},
	}
}

func TestKubeCatalogFollowsACRDCreatedAndDeletedAtRuntime(t *testing.T) {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Now())
	c, discoveryClient := newKubeCatalog(t, clock)
	require.NoError(t, c.Refresh(ctx))
	before := c.Generation()
	_, ok := c.Lookup(gvr("discoverytest.example.com", "v1", "gizmos"))
	require.False(t, ok)

	crd := gizmoCRD()
	require.NoError(t, kube.Client().Create(ctx, crd))
	t.Cleanup(func() { _ = kube.Client().Delete(context.Background(), crd) })
	require.Eventually(t, func() bool {
		require.NoError(t, c.Refresh(ctx))
		_, served := c.Lookup(gvr("discoverytest.example.com", "v1beta1", "gizmos"))
		_, servedV1 := c.Lookup(gvr("discoverytest.example.com", "v1", "gizmos"))
		return served && servedV1
	}, 30*time.Second, 200*time.Millisecond, "the new CRD never showed up on Refresh")

	gizmos := lookup(t, c, gvr("discoverytest.example.com", "v1", "gizmos"))
	require.True(t, gizmos.Preferred && gizmos.Followable && gizmos.Namespaced)
	require.Equal(t, "Gizmo", gizmos.Kind)
	require.False(t, lookup(t, c, gvr("discoverytest.example.com", "v1beta1", "gizmos")).Preferred)
	_, ok = c.Lookup(gvr("discoverytest.example.com", "v1alpha1", "gizmos"))
	require.False(t, ok, "an unserved version is not a type")
	for _, info := range c.Types() {
		require.NotEqual(t, "gizmos/status", info.GVR.Resource)
	}
	added := c.Generation()
	require.Greater(t, added, before)

	require.NoError(t, kube.Client().Delete(ctx, crd))
	waitUntilNotServed(t, discoveryClient, "discoverytest.example.com/v1")
	require.NoError(t, c.Refresh(ctx))
	lookup(t, c, gvr("discoverytest.example.com", "v1", "gizmos")) // within grace: still known
	require.Equal(t, added, c.Generation())

	clock.Step(2 * time.Minute)
	require.NoError(t, c.Refresh(ctx))
	_, ok = c.Lookup(gvr("discoverytest.example.com", "v1", "gizmos"))
	require.False(t, ok, "gone after the grace")
	require.Greater(t, c.Generation(), added)
}

// waitUntilNotServed waits for the CRD to be fully deleted and its group
// version to be gone from discovery.
func waitUntilNotServed(t *testing.T, discoveryClient *k8sdiscovery.DiscoveryClient, groupVersion string) {
	t.Helper()
	require.Eventually(t, func() bool {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := kube.Client().Get(context.Background(), client.ObjectKey{Name: "gizmos.discoverytest.example.com"}, crd)
		if !apierrors.IsNotFound(err) {
			return false
		}
		_, err = discoveryClient.ServerResourcesForGroupVersionWithContext(context.Background(), groupVersion)
		return apierrors.IsNotFound(err)
	}, 60*time.Second, 200*time.Millisecond, "%s is still served", groupVersion)
}

// brokenAPIService registers blink.example.com/v1 behind a Service that does
// not exist, the shape of an aggregated API server that is down: aggregated
// discovery reports the group version stale.
func brokenAPIService() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": "v1.blink.example.com"},
		"spec": map[string]any{
			"group": "blink.example.com", "version": "v1",
			"groupPriorityMinimum": int64(100), "versionPriority": int64(10),
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"namespace": "default", "name": "missing"},
		},
	}}
}

func TestKubeCatalogAppliesTheRestOfAPartialScan(t *testing.T) {
	ctx := context.Background()
	c, _ := newKubeCatalog(t, clocktesting.NewFakeClock(time.Now()))
	require.NoError(t, c.Refresh(ctx))

	apiService := brokenAPIService()
	require.NoError(t, kube.Client().Create(ctx, apiService))
	t.Cleanup(func() { _ = kube.Client().Delete(context.Background(), apiService) })
	crd := gizmoCRD()
	crd.Name, crd.Spec.Group = "gizmos.partialtest.example.com", "partialtest.example.com"
	require.NoError(t, kube.Client().Create(ctx, crd))
	t.Cleanup(func() { _ = kube.Client().Delete(context.Background(), crd) })

	blink := schema.GroupVersion{Group: "blink.example.com", Version: "v1"}
	require.Eventually(t, func() bool {
		err := c.Refresh(ctx)
		failed, partial := k8sdiscovery.GroupDiscoveryFailedErrorGroups(err)
		_, gizmosKnown := c.Lookup(gvr("partialtest.example.com", "v1", "gizmos"))
		return partial && failed[blink] != nil && gizmosKnown
	}, 30*time.Second, 200*time.Millisecond, "a broken APIService must not hide the rest of the scan")

	lookup(t, c, gvr("", "v1", "configmaps"))
	for _, info := range c.Types() {
		require.NotEqual(t, "blink.example.com", info.GVR.Group, "a failed group version has no facts to invent")
	}
}
