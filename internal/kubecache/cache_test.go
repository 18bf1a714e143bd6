package kubecache_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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
// needs before the start, starts it and waits for it, as the manager does.
func startCache(t *testing.T, namespace string, setup func(c cache.Cache)) (cache.Cache, context.Context) {
	t.Helper()
	return startCacheWith(t, kube.Config(), cache.Options{Scheme: kube.Scheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}}}, setup)
}

func startCacheWith(t *testing.T, cfg *rest.Config, opts cache.Options, setup func(c cache.Cache)) (cache.Cache, context.Context) {
	t.Helper()
	c, err := kubecache.New(cfg, opts)
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
	require.True(t, c.WaitForCacheSync(ctx))
	return c, ctx
}

func TestInformersAskedForBeforeStartAreWaitedForByWaitForCacheSync(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 50)
	c, ctx := startCache(t, namespace, func(c cache.Cache) {
		require.NoError(t, c.IndexField(context.Background(), &corev1.ConfigMap{}, "byName",
			func(o client.Object) []string { return []string{o.GetName()} }))
	})

	var list corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{"byName": "cm-7"}))
	require.Len(t, list.Items, 1, "the indexed informer had listed everything when the wait returned")
}

func TestGetInformerAfterStartReturnsASyncedInformer(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 30)
	c, ctx := startCache(t, namespace, nil)

	informer, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)
	require.True(t, informer.HasSynced())
	requireConfigMaps(ctx, t, c, namespace, 30)
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

// The manager's setup: ConfigMaps cached in some namespaces only (a cache of
// their own inside the inner one), nothing asked for before the start. A
// read after the wait finds that cache started.
func TestAReadAfterTheWaitFindsACacheOfSomeNamespacesStarted(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 3)
	opts := cache.Options{Scheme: kube.Scheme(), ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{namespace: {}}}}}
	c, ctx := startCacheWith(t, kube.Config(), opts, nil)
	requireConfigMaps(ctx, t, c, namespace, 3)
}

// requireConfigMaps: the cache lists n ConfigMaps in namespace.
func requireConfigMaps(ctx context.Context, t *testing.T, c cache.Cache, namespace string, n int) {
	t.Helper()
	var list corev1.ConfigMapList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(namespace)))
	require.Len(t, list.Items, n)
}

// WaitForCacheSync does not wait for an informer somebody asked for, and
// waits for, after the start: here one that can never sync, its list
// forbidden.
func TestWaitForCacheSyncLeavesAnInformerToTheCallThatWaitsForIt(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 1)
	user := "kubecache-" + namespace
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "configmaps"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	require.NoError(t, kube.Client().Create(ctx, role))
	require.NoError(t, kube.Client().Create(ctx, binding))
	opts := cache.Options{Scheme: kube.Scheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}}}
	c, started := startCacheWith(t, kube.ConfigAs(user), opts, func(c cache.Cache) {
		_, err := c.GetInformer(ctx, &corev1.ConfigMap{})
		require.NoError(t, err)
	})

	short, cancel := context.WithTimeout(started, 200*time.Millisecond)
	defer cancel()
	_, err := c.GetInformer(short, &corev1.Secret{})
	require.ErrorIs(t, err, context.DeadlineExceeded, "Secrets are forbidden: the informer never syncs")

	wait, cancelWait := context.WithTimeout(started, time.Minute)
	defer cancelWait()
	require.True(t, c.WaitForCacheSync(wait), "the Secret informer is its asker's to wait for")
}

// An informer removed before it synced is no longer waited for.
func TestARemovedInformerIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	namespace := newNamespace(t, 1)
	startCache(t, namespace, func(c cache.Cache) {
		_, err := c.GetInformer(context.Background(), &corev1.Secret{})
		require.NoError(t, err)
		require.NoError(t, c.RemoveInformer(context.Background(), &corev1.Secret{}))
	})
}
