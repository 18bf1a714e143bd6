// Package kubecache is controller-runtime's informer cache with one
// change: waiting for an informer, for the whole cache, or for an event
// handler to have its first list wakes on client-go's done channels
// instead of polling every 100 ms.
//
// controller-runtime (v0.25) waits with client-go's WaitForCacheSync, which
// looks every 100 ms. A controller's watch source waits three times in a
// row (its informer, the whole cache, its handler) and the manager waits
// for the cache before starting controllers, so about 300 ms of a warm
// start was spent between a sync and the next look at it. client-go's
// informers and handler registrations report the same completion as a
// channel (HasSyncedChecker); this cache waits on those.
//
// WaitForCacheSync waits for the informers nobody else waits for: those
// registered before Start (field indexes, informers asked for during
// setup) and those handed out with BlockUntilSynced(false). An informer
// handed out after Start is waited for by the call that asked for it, so
// a controller's watch source, which calls WaitForCacheSync after its own
// informer has synced, does not also wait for another controller's (the
// GitProvider controller's ConfigMap metadata listing every ConfigMap in
// the cluster held back the GitTarget controller). Its first success also
// asks the inner cache once, whose caches per type and per namespace start
// on goroutines of their own.
package kubecache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// New is a cache.NewCacheFunc: controller-runtime's cache, built from the
// same options, behind Cache.
func New(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	inner, err := cache.New(config, opts)
	if err != nil {
		return nil, err
	}
	scheme := opts.Scheme
	if scheme == nil {
		scheme = clientgoscheme.Scheme // as cache.New defaults it
	}
	return Wrap(inner, scheme), nil
}

// Wrap returns inner with its waits on done channels; scheme (the inner
// cache's) names the kinds of lists read.
func Wrap(inner cache.Cache, scheme *runtime.Scheme) *Cache {
	return &Cache{Cache: inner, scheme: scheme, startedCh: make(chan struct{}), stopped: make(chan struct{}),
		unwaited: map[string]cache.Informer{}, removed: map[string]chan struct{}{}}
}

// Cache is a cache.Cache whose sync waits do not poll.
type Cache struct {
	cache.Cache
	scheme *runtime.Scheme

	startedOnce sync.Once
	startedCh   chan struct{} // closed by Start
	stopped     chan struct{} // closed once Start's context has ended
	stopOnce    sync.Once
	// innerSynced is set once the inner cache has reported itself started
	// and synced: its caches per type and per namespace start on their own
	// goroutines, and a read before that fails.
	innerSynced atomic.Bool

	mu sync.Mutex
	// unwaited are the informers WaitForCacheSync waits for, by kindKey:
	// registered before Start, or handed out without waiting.
	unwaited map[string]cache.Informer
	// removed has a channel per kind handed out, closed by RemoveInformer
	// to end a handler's wait on an informer that is going away.
	removed map[string]chan struct{}
	// syncedReads are the object and list types (readKey) whose informer
	// a read has found synced: later reads go straight to the inner cache.
	syncedReads sync.Map
}

var _ cache.Cache = (*Cache)(nil)

// Start runs the informers until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	c.startedOnce.Do(func() { close(c.startedCh) })
	go func() {
		<-ctx.Done()
		c.stopOnce.Do(func() { close(c.stopped) })
	}()
	return c.Cache.Start(ctx)
}

// GetInformer returns the informer of obj's kind, waiting (unless asked
// not to) until it has synced once the cache runs.
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	informer, err := c.Cache.GetInformer(ctx, obj, append(opts, cache.BlockUntilSynced(false))...)
	if err != nil {
		return nil, err
	}
	return c.handOut(ctx, informer, kindKey(obj), opts)
}

// GetInformerForKind is GetInformer by GroupVersionKind.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	informer, err := c.Cache.GetInformerForKind(ctx, gvk, append(opts, cache.BlockUntilSynced(false))...)
	if err != nil {
		return nil, err
	}
	return c.handOut(ctx, informer, "kind "+gvk.String(), opts)
}

// IndexField adds the index, first noting obj's informer (which the index
// creates) for WaitForCacheSync.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	informer, err := c.Cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	c.track(kindKey(obj), informer)
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// RemoveInformer stops obj's informer, which WaitForCacheSync then no
// longer waits for (it would never sync), and ends a handler's wait on it.
func (c *Cache) RemoveInformer(ctx context.Context, obj client.Object) error {
	key := kindKey(obj)
	c.mu.Lock()
	delete(c.unwaited, key)
	if removed, ok := c.removed[key]; ok {
		close(removed)
		delete(c.removed, key)
	}
	c.mu.Unlock()
	c.syncedReads.Clear()
	return c.Cache.RemoveInformer(ctx, obj)
}

// WaitForCacheSync waits until the cache has started and every informer
// nobody else waits for has synced (see the package comment); false when
// ctx ends first.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.startedCh:
	case <-ctx.Done():
		return false
	}
	c.mu.Lock()
	informers := make([]cache.Informer, 0, len(c.unwaited))
	for _, informer := range c.unwaited {
		informers = append(informers, informer)
	}
	c.mu.Unlock()
	for _, informer := range informers {
		if !waitDone(ctx, informer.HasSyncedChecker()) {
			return false
		}
	}
	if c.innerSynced.Load() {
		return true
	}
	// Once: the inner cache's own wait, for its caches to have started.
	// Every informer it knows of has synced or is another caller's, so it
	// answers at its first look unless a cache is still starting.
	if !c.Cache.WaitForCacheSync(ctx) {
		return false
	}
	c.innerSynced.Store(true)
	return true
}

func (c *Cache) handOut(ctx context.Context, informer cache.Informer, key string, opts []cache.InformerGetOption) (cache.Informer, error) {
	// Before Start nothing syncs, and the inner cache does not wait then
	// either: WaitForCacheSync waits for it instead.
	if blocksUntilSynced(opts) && c.started() {
		if !waitDone(ctx, informer.HasSyncedChecker()) {
			return nil, fmt.Errorf("waiting for the %s informer to sync: %w", key, context.Cause(ctx))
		}
	} else {
		c.track(key, informer)
	}
	return &handlerSyncedInformer{Informer: informer, stopped: c.stopped, removed: c.removal(key)}, nil
}

// started reports whether Start was called.
func (c *Cache) started() bool {
	select {
	case <-c.startedCh:
		return true
	default:
		return false
	}
}

func (c *Cache) track(key string, informer cache.Informer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unwaited[key] = informer
}

func (c *Cache) removal(key string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	removed, ok := c.removed[key]
	if !ok {
		removed = make(chan struct{})
		c.removed[key] = removed
	}
	return removed
}

// kindKey names the informer obj asks for: its Go type, and the kind the
// generic types (unstructured, metadata only) carry.
func kindKey(obj client.Object) string {
	switch obj.(type) {
	case *unstructured.Unstructured, *metav1.PartialObjectMetadata:
		return fmt.Sprintf("%T %s", obj, obj.GetObjectKind().GroupVersionKind())
	}
	return fmt.Sprintf("%T", obj)
}

func blocksUntilSynced(opts []cache.InformerGetOption) bool {
	var o cache.InformerGetOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o.BlockUntilSynced == nil || *o.BlockUntilSynced
}

func waitDone(ctx context.Context, checker toolscache.DoneChecker) bool {
	select {
	case <-checker.Done():
		return true
	case <-ctx.Done():
		return false
	}
}
