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
// the cluster held back the GitTarget controller).
package kubecache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
	return Wrap(inner), nil
}

// Wrap returns inner with its waits on done channels.
func Wrap(inner cache.Cache) *Cache {
	return &Cache{Cache: inner, startedCh: make(chan struct{}), stopped: make(chan struct{})}
}

// Cache is a cache.Cache whose sync waits do not poll.
type Cache struct {
	cache.Cache

	started     atomic.Bool
	startedOnce sync.Once
	startedCh   chan struct{} // closed by Start
	stopped     chan struct{} // closed once Start's context has ended
	stopOnce    sync.Once

	mu sync.Mutex
	// unwaited are the informers WaitForCacheSync waits for: registered
	// before Start, or handed out without waiting.
	unwaited []cache.Informer
}

var _ cache.Cache = (*Cache)(nil)

// Start runs the informers until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	c.started.Store(true)
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
	return c.handOut(ctx, informer, fmt.Sprintf("%T", obj), opts)
}

// GetInformerForKind is GetInformer by GroupVersionKind.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	informer, err := c.Cache.GetInformerForKind(ctx, gvk, append(opts, cache.BlockUntilSynced(false))...)
	if err != nil {
		return nil, err
	}
	return c.handOut(ctx, informer, gvk.String(), opts)
}

// IndexField adds the index, first noting obj's informer (which the index
// creates) for WaitForCacheSync.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	informer, err := c.Cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	c.track(informer)
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// WaitForCacheSync waits until Start was called and every informer nobody
// else waits for has synced (see the package comment); false when ctx ends
// first.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.startedCh:
	case <-ctx.Done():
		return false
	}
	c.mu.Lock()
	informers := append([]cache.Informer(nil), c.unwaited...)
	c.mu.Unlock()
	for _, informer := range informers {
		if !waitDone(ctx, informer.HasSyncedChecker()) {
			return false
		}
	}
	return true
}

func (c *Cache) handOut(ctx context.Context, informer cache.Informer, what string, opts []cache.InformerGetOption) (cache.Informer, error) {
	// Before Start nothing syncs, and the inner cache does not wait then
	// either: WaitForCacheSync waits for it instead.
	if blocksUntilSynced(opts) && c.started.Load() {
		if !waitDone(ctx, informer.HasSyncedChecker()) {
			return nil, fmt.Errorf("waiting for the %s informer to sync: %w", what, context.Cause(ctx))
		}
	} else {
		c.track(informer)
	}
	return &handlerSyncedInformer{Informer: informer, stopped: c.stopped}, nil
}

func (c *Cache) track(informer cache.Informer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The informers are pointers (one per kind, or a fresh multi-namespace
	// one per call), so == compares identities.
	for _, known := range c.unwaited {
		if known == informer {
			return
		}
	}
	c.unwaited = append(c.unwaited, informer)
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
