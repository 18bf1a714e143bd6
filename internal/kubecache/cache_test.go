package kubecache_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/kubecache"
)

// newNamespace creates a namespace holding n ConfigMaps.
func newNamespace(t *testing.T, n int) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubecache-"}}
	require.NoError(t, kube.Client().Create(ctx, ns))
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("cm-%d", i)}}
		require.NoError(t, kube.Client().Create(ctx, cm))
	}
	return ns.Name
}

// startCache builds the cache for namespace, lets setup register what it
// needs before the start, and starts it.
func startCache(t *testing.T, namespace string, setup func(c cache.Cache)) (cache.Cache, context.Context) {
	t.Helper()
	c, err := kubecache.New(kube.Config(), cache.Options{Scheme: kube.Scheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	require.NoError(t, err)
	if setup != nil {
		setup(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return c, ctx
}

func TestInformersAskedForBeforeStartAreWaitedForByWaitForCacheSync(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 50)
	c, ctx := startCache(t, namespace, func(c cache.Cache) {
		require.NoError(t, c.IndexField(context.Background(), &corev1.ConfigMap{}, "byName",
			func(o client.Object) []string { return []string{o.GetName()} }))
	})
	require.True(t, c.WaitForCacheSync(ctx))

	var list corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{"byName": "cm-7"}))
	require.Len(t, list.Items, 1, "the indexed informer had listed everything when the wait returned")
}

func TestGetInformerAfterStartReturnsASyncedInformer(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 30)
	c, ctx := startCache(t, namespace, nil)
	require.True(t, c.WaitForCacheSync(ctx))

	informer, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)
	require.True(t, informer.HasSynced())
	var list corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(namespace)))
	require.Len(t, list.Items, 30)
}

func TestAHandlerAddedToASyncedInformerHasEveryObjectWhenTheAddReturns(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 40)
	c, ctx := startCache(t, namespace, nil)
	informer, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)

	var adds atomic.Int64
	registration, err := informer.AddEventHandlerWithOptions(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { adds.Add(1) },
	}, toolscache.HandlerOptions{})
	require.NoError(t, err)
	require.True(t, registration.HasSynced(), "a caller's first look finds the handler synced")
	require.EqualValues(t, 40, adds.Load())
}

func TestGetInformerWithoutBlockingIsLeftToWaitForCacheSync(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 20)
	c, ctx := startCache(t, namespace, nil)
	informer, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	require.NoError(t, err)
	require.True(t, c.WaitForCacheSync(ctx))
	require.True(t, informer.HasSynced())
}

func TestWaitsEndWithTheirContext(t *testing.T) {
	t.Parallel()
	c, err := kubecache.New(kube.Config(), cache.Options{Scheme: kube.Scheme()})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.False(t, c.WaitForCacheSync(ctx), "a cache that never starts never syncs")

	started, startedCtx := startCache(t, newNamespace(t, 0), nil)
	ended, cancelEnded := context.WithCancel(startedCtx)
	cancelEnded()
	_, err = started.GetInformer(ended, &corev1.Secret{})
	require.ErrorIs(t, err, context.Canceled)
}
