package engine

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

// notifier carries status refreshes of GitTargets to the reconciler without
// ever blocking a worker and without ever losing one: notifications of a
// target not yet delivered merge into one, so however many arrive while
// nobody reads (targets × streams × phase changes at start-up), each
// target's latest is delivered.
type notifier struct {
	mu      sync.Mutex
	pending map[branch.TargetKey]struct{}
	// signal holds one token while pending may be non-empty.
	signal chan struct{}
	out    chan event.GenericEvent
}

func newNotifier() *notifier {
	return &notifier{
		pending: map[branch.TargetKey]struct{}{},
		signal:  make(chan struct{}, 1),
		out:     make(chan event.GenericEvent),
	}
}

// notify queues a refresh of t; it never blocks.
func (n *notifier) notify(t branch.TargetKey) {
	n.mu.Lock()
	n.pending[t] = struct{}{}
	n.mu.Unlock()
	select {
	case n.signal <- struct{}{}:
	default: // a token is there already: the pump will see t
	}
}

// run hands the pending targets to out until ctx ends. A target notified
// again after it was taken is pending anew, so a refresh is never older
// than the change that asked for it.
func (n *notifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.signal:
		}
		for _, t := range n.take() {
			select {
			case n.out <- event.GenericEvent{Object: targetObject(t)}:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (n *notifier) take() []branch.TargetKey {
	n.mu.Lock()
	defer n.mu.Unlock()
	batch := make([]branch.TargetKey, 0, len(n.pending))
	for t := range n.pending {
		batch = append(batch, t)
	}
	clear(n.pending)
	return batch
}
