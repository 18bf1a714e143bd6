package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sdiscovery "k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/internal/discovery"
)

func watchableVerbs() []string {
	return []string{"create", "delete", "get", "list", "patch", "update", "watch"}
}

func apiResource(name, kind string, namespaced bool, verbs ...string) metav1.APIResource {
	return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: verbs}
}

func resourceList(groupVersion string, resources ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: groupVersion, APIResources: resources}
}

// baseSurface is a small cluster: the core group, apps with a subresource,
// and a CRD group serving two versions. The fake discovery client takes a
// group's first listed version as its preferred one.
func baseSurface() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		resourceList("v1",
			apiResource("configmaps", "ConfigMap", true, watchableVerbs()...),
			apiResource("secrets", "Secret", true, watchableVerbs()...),
			apiResource("namespaces", "Namespace", false, watchableVerbs()...),
			apiResource("events", "Event", true, watchableVerbs()...),
			apiResource("pods", "Pod", true, watchableVerbs()...),
			apiResource("pods/status", "Pod", true, "get", "patch", "update"),
			apiResource("bindings", "Binding", true, "create"),
		),
		resourceList("apps/v1",
			apiResource("deployments", "Deployment", true, watchableVerbs()...),
			apiResource("deployments/scale", "Scale", true, "get", "patch", "update"),
		),
		resourceList("example.com/v2",
			apiResource("widgets", "Widget", true, watchableVerbs()...),
		),
		resourceList("example.com/v1",
			apiResource("widgets", "Widget", true, watchableVerbs()...),
			apiResource("gadgets", "Gadget", false, watchableVerbs()...),
		),
	}
}

func newFakeDiscovery(lists []*metav1.APIResourceList) *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: lists}}
}

// failResourceDiscovery makes every scan report the given error, as a real
// client does for a partial (ErrGroupDiscoveryFailed) or total failure.
func failResourceDiscovery(fake *fakediscovery.FakeDiscovery, err error) {
	fake.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, err
	})
}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

func newCatalog(fake *fakediscovery.FakeDiscovery, clock *clocktesting.FakeClock) *discovery.Catalog {
	return &discovery.Catalog{Discovery: fake, Clock: clock, Grace: 2 * time.Minute}
}

func lookup(t *testing.T, c *discovery.Catalog, g schema.GroupVersionResource) discovery.TypeInfo {
	t.Helper()
	info, ok := c.Lookup(g)
	require.Truef(t, ok, "expected %s in the catalog", g)
	return info
}

func TestCatalogRecordsEveryServedVersionWithVerdicts(t *testing.T) {
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clocktesting.NewFakeClock(time.Now()))
	c.Policy = discovery.Policy{AdditionalSensitive: []schema.GroupResource{{Group: "example.com", Resource: "gadgets"}}}
	require.NoError(t, c.Refresh(context.Background()))

	configMaps := lookup(t, c, gvr("", "v1", "configmaps"))
	require.Equal(t, discovery.TypeInfo{
		GVR: gvr("", "v1", "configmaps"), Kind: "ConfigMap", Namespaced: true,
		Verbs: watchableVerbs(), Preferred: true, Followable: true,
	}, configMaps)

	require.True(t, lookup(t, c, gvr("", "v1", "secrets")).Sensitive, "core secrets are always sensitive")
	require.True(t, lookup(t, c, gvr("example.com", "v1", "gadgets")).Sensitive, "policy adds sensitive types")
	require.False(t, lookup(t, c, gvr("example.com", "v1", "gadgets")).Namespaced)

	events := lookup(t, c, gvr("", "v1", "events"))
	require.False(t, events.Followable)
	require.Contains(t, events.Reason, "runtime-only")

	bindings := lookup(t, c, gvr("", "v1", "bindings"))
	require.False(t, bindings.Followable)

	for _, sub := range []schema.GroupVersionResource{gvr("", "v1", "pods/status"), gvr("apps", "v1", "deployments/scale")} {
		_, ok := c.Lookup(sub)
		require.Falsef(t, ok, "subresource %s must not be a type", sub)
	}

	require.True(t, lookup(t, c, gvr("example.com", "v2", "widgets")).Preferred)
	require.False(t, lookup(t, c, gvr("example.com", "v1", "widgets")).Preferred, "a non-preferred version is recorded too")
	require.True(t, lookup(t, c, gvr("example.com", "v1", "gadgets")).Preferred,
		"a resource absent from the preferred version prefers its best served version")

	types := c.Types()
	require.Len(t, types, 10)
	for i := 1; i < len(types); i++ {
		a, b := types[i-1].GVR, types[i].GVR
		require.Truef(t, a.Group < b.Group || (a.Group == b.Group && (a.Version < b.Version ||
			(a.Version == b.Version && a.Resource < b.Resource))), "types out of order: %s before %s", a, b)
	}
}

func TestCatalogTypesAreACopy(t *testing.T) {
	c := newCatalog(newFakeDiscovery(baseSurface()), clocktesting.NewFakeClock(time.Now()))
	require.NoError(t, c.Refresh(context.Background()))
	types := c.Types()
	types[0].Verbs[0] = "mutated"
	types[0].Kind = "Mutated"
	require.NotEqual(t, "Mutated", c.Types()[0].Kind)
	require.NotEqual(t, "mutated", c.Types()[0].Verbs[0])
}

func TestCatalogFailedGroupVersionKeepsLastKnownFacts(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clock)
	require.NoError(t, c.Refresh(context.Background()))
	generation := c.Generation()

	// The aggregated server behind example.com/v1 is down: the real client
	// omits its resources and reports it failed.
	failedGV := schema.GroupVersion{Group: "example.com", Version: "v1"}
	lists := baseSurface()
	fake.Resources = append(lists[:3:3], resourceList("example.com/v1"))
	failResourceDiscovery(fake, &k8sdiscovery.ErrGroupDiscoveryFailed{
		Groups: map[schema.GroupVersion]error{failedGV: errors.New("service unavailable")},
	})

	for range 3 {
		err := c.Refresh(context.Background())
		require.Error(t, err)
		failed, ok := k8sdiscovery.GroupDiscoveryFailedErrorGroups(err)
		require.True(t, ok, "a partial scan is reported as ErrGroupDiscoveryFailed")
		require.Contains(t, failed, failedGV)

		gadgets := lookup(t, c, gvr("example.com", "v1", "gadgets"))
		require.True(t, gadgets.Followable)
		lookup(t, c, gvr("example.com", "v1", "widgets"))
		require.Equal(t, generation, c.Generation(), "a failure changes nothing")
		clock.Step(5 * time.Minute) // a failure is not absence: no grace runs out
	}
}

func TestCatalogVanishedGroupVersionStaysForGrace(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clock)
	require.NoError(t, c.Refresh(context.Background()))
	generation := c.Generation()

	fake.Resources = baseSurface()[:3] // example.com/v1 vanishes from a complete scan
	require.NoError(t, c.Refresh(context.Background()))
	lookup(t, c, gvr("example.com", "v1", "gadgets"))
	require.Equal(t, generation, c.Generation())

	clock.Step(119 * time.Second)
	require.NoError(t, c.Refresh(context.Background()))
	lookup(t, c, gvr("example.com", "v1", "gadgets"))
	require.Equal(t, generation, c.Generation())

	clock.Step(time.Second)
	require.NoError(t, c.Refresh(context.Background()))
	_, ok := c.Lookup(gvr("example.com", "v1", "gadgets"))
	require.False(t, ok, "removed once absent for the whole grace")
	_, ok = c.Lookup(gvr("example.com", "v1", "widgets"))
	require.False(t, ok)
	lookup(t, c, gvr("example.com", "v2", "widgets"))
	require.Greater(t, c.Generation(), generation)
}

func TestCatalogReappearanceRestartsGrace(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clock)
	require.NoError(t, c.Refresh(context.Background()))

	fake.Resources = baseSurface()[:3]
	require.NoError(t, c.Refresh(context.Background())) // missing since t0
	clock.Step(time.Minute)
	fake.Resources = baseSurface()
	require.NoError(t, c.Refresh(context.Background())) // back at t0+1m
	clock.Step(30 * time.Second)
	fake.Resources = baseSurface()[:3]
	require.NoError(t, c.Refresh(context.Background())) // missing again since t0+1m30
	clock.Step(100 * time.Second)
	require.NoError(t, c.Refresh(context.Background())) // t0+3m10: 100s after the new absence
	lookup(t, c, gvr("example.com", "v1", "gadgets"))
}

func TestCatalogPreferredMovesWhenThePreferredVersionVanishes(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clock)
	require.NoError(t, c.Refresh(context.Background()))

	// example.com/v2 is dropped and v1 becomes the listed preferred version;
	// v2 rides its grace but must not stay preferred next to v1.
	lists := baseSurface()
	fake.Resources = append(lists[:2:2], lists[3])
	require.NoError(t, c.Refresh(context.Background()))
	require.False(t, lookup(t, c, gvr("example.com", "v2", "widgets")).Preferred)
	require.True(t, lookup(t, c, gvr("example.com", "v1", "widgets")).Preferred)
}

func TestCatalogTotalFailureLeavesCatalogUntouched(t *testing.T) {
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clocktesting.NewFakeClock(time.Now()))
	require.NoError(t, c.Refresh(context.Background()))
	before := c.Types()

	failResourceDiscovery(fake, errors.New("connection refused"))
	err := c.Refresh(context.Background())
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, before, c.Types())
}

func TestCatalogRefusesAnEmptyAnswer(t *testing.T) {
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clocktesting.NewFakeClock(time.Now()))
	require.NoError(t, c.Refresh(context.Background()))
	generation := c.Generation()

	fake.Resources = nil
	require.ErrorContains(t, c.Refresh(context.Background()), "no API groups")
	require.Len(t, c.Types(), 10)
	require.Equal(t, generation, c.Generation())
}

func TestCatalogWithoutDiscoveryFails(t *testing.T) {
	require.ErrorContains(t, (&discovery.Catalog{}).Refresh(context.Background()), "no discovery client")
}

func TestCatalogGenerationTracksChanges(t *testing.T) {
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clocktesting.NewFakeClock(time.Now()))
	require.Zero(t, c.Generation(), "nothing known before the first refresh")
	_, ok := c.Lookup(gvr("", "v1", "configmaps"))
	require.False(t, ok)
	require.Empty(t, c.Types())

	require.NoError(t, c.Refresh(context.Background()))
	first := c.Generation()
	require.NotZero(t, first)

	require.NoError(t, c.Refresh(context.Background()))
	require.Equal(t, first, c.Generation(), "an identical scan is not a change")

	// A verdict change: gadgets stops serving watch.
	lists := baseSurface()
	lists[3].APIResources[1].Verbs = []string{"get", "list"}
	fake.Resources = lists
	require.NoError(t, c.Refresh(context.Background()))
	second := c.Generation()
	require.Greater(t, second, first)
	gadgets := lookup(t, c, gvr("example.com", "v1", "gadgets"))
	require.False(t, gadgets.Followable)
	require.Contains(t, gadgets.Reason, "watch")

	// A new type appears.
	fake.Resources = append(lists, resourceList("other.io/v1", apiResource("things", "Thing", true, watchableVerbs()...)))
	require.NoError(t, c.Refresh(context.Background()))
	require.Greater(t, c.Generation(), second)
	lookup(t, c, gvr("other.io", "v1", "things"))
}

// TestCatalogConcurrentReaders is meaningful under -race: readers must never
// observe a half-built snapshot while Refresh replaces it.
func TestCatalogConcurrentReaders(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	fake := newFakeDiscovery(baseSurface())
	c := newCatalog(fake, clock)
	require.NoError(t, c.Refresh(context.Background()))

	ctx, cancel := context.WithCancel(context.Background())
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for ctx.Err() == nil {
				types := c.Types()
				for _, info := range types {
					got, ok := c.Lookup(info.GVR)
					if ok && got.GVR != info.GVR {
						panic(fmt.Sprintf("lookup of %s returned %s", info.GVR, got.GVR))
					}
				}
				_ = c.Generation()
			}
		})
	}
	for i := range 50 {
		lists := baseSurface()
		if i%2 == 0 {
			lists = lists[:3]
			clock.Step(3 * time.Minute)
		}
		fake.Resources = lists
		require.NoError(t, c.Refresh(ctx))
	}
	cancel()
	readers.Wait()
}
