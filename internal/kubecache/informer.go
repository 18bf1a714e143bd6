package kubecache

import (
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// handlerSyncedInformer returns from adding a handler to a synced informer
// once the handler has had the informer's objects, so that a caller
// polling the registration's HasSynced (controller-runtime's watch source)
// finds it done at its first look instead of 100 ms later. Delivering
// them takes the informer's own goroutine no longer than the handler
// takes; a stopped cache or a removed informer ends the wait.
//
// So the add blocks while the handler sees every object: a caller must not
// hold, while adding, a lock the handler takes. controller-runtime adds its
// handlers from a goroutine of their own, and they only fill a queue.
type handlerSyncedInformer struct {
	cache.Informer
	stopped <-chan struct{}
	removed <-chan struct{}
}

func (i *handlerSyncedInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.awaitHandler(i.Informer.AddEventHandler(handler))
}

func (i *handlerSyncedInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.awaitHandler(i.Informer.AddEventHandlerWithResyncPeriod(handler, resync))
}

func (i *handlerSyncedInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.awaitHandler(i.Informer.AddEventHandlerWithOptions(handler, options))
}

func (i *handlerSyncedInformer) awaitHandler(registration toolscache.ResourceEventHandlerRegistration, err error) (toolscache.ResourceEventHandlerRegistration, error) {
	// An informer that has not synced yet (the cache not started) would
	// make this wait on the start; the caller waits for that itself.
	if err != nil || !i.Informer.HasSynced() {
		return registration, err
	}
	select {
	case <-registration.HasSyncedChecker().Done():
	case <-i.stopped:
	case <-i.removed:
	}
	return registration, nil
}
