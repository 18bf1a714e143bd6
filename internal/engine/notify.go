package engine

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// coalescer hands objects to a reconciler (source.Channel) without ever
// blocking whoever asks and without ever losing one: requests for an
// object not yet delivered merge into one, so however many arrive while
// nobody reads (targets × streams × phase changes at start-up), each
// object's latest is delivered. It is bounded by the number of objects,
// not of requests.
type coalescer[K comparable] struct {
	object  func(K) client.Object
	mu      sync.Mutex
	pending map[K]struct{}
	// signal holds one token while pending may be non-empty.
	signal chan struct{}
	out    chan event.GenericEvent
}

func newCoalescer[K comparable](object func(K) client.Object) *coalescer[K] {
	return &coalescer[K]{
		object:  object,
		pending: map[K]struct{}{},
		signal:  make(chan struct{}, 1),
		out:     make(chan event.GenericEvent),
	}
}

// notify queues a reconcile of k; it never blocks.
func (n *coalescer[K]) notify(k K) {
	n.mu.Lock()
	n.pending[k] = struct{}{}
	n.mu.Unlock()
	select {
	case n.signal <- struct{}{}:
	default: // a token is there already: the pump will see k
	}
}

// run hands the pending objects to out until ctx ends. An object notified
// again after it was taken is pending anew, so a reconcile is never older
// than the change that asked for it.
func (n *coalescer[K]) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.signal:
		}
		for _, k := range n.take() {
			select {
			case n.out <- event.GenericEvent{Object: n.object(k)}:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (n *coalescer[K]) take() []K {
	n.mu.Lock()
	defer n.mu.Unlock()
	batch := make([]K, 0, len(n.pending))
	for k := range n.pending {
		batch = append(batch, k)
	}
	clear(n.pending)
	return batch
}
