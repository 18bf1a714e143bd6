package attribution

import "github.com/configbutler/gitops-reverser/internal/facts"

// waitKey is one key a waiter can be woken on: a slot key of a stream.
type waitKey struct {
	stream facts.StreamKey
	key    slotKey
}

// waiter is one Resolve asleep until a fact is filed under a key it is
// registered under. wake never blocks: one pending wake is enough, since
// the woken resolver looks at every key again.
type waiter struct{ wake chan struct{} }

// register files a waiter under keys of stream. Registering before the
// first lookup closes the race a fact filed in between would win: Apply
// files under the index lock and only then wakes, so a fact is either seen
// by the lookup or wakes the waiter.
func (x *Index) register(stream facts.StreamKey, keys []slotKey) *waiter {
	w := &waiter{wake: make(chan struct{}, 1)}
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	if x.waiters == nil {
		x.waiters = map[waitKey]map[*waiter]struct{}{}
	}
	for _, k := range keys {
		wk := waitKey{stream: stream, key: k}
		set := x.waiters[wk]
		if set == nil {
			set = map[*waiter]struct{}{}
			x.waiters[wk] = set
		}
		set[w] = struct{}{}
	}
	return w
}

func (x *Index) unregister(stream facts.StreamKey, keys []slotKey, w *waiter) {
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	for _, k := range keys {
		wk := waitKey{stream: stream, key: k}
		delete(x.waiters[wk], w)
		if len(x.waiters[wk]) == 0 {
			delete(x.waiters, wk)
		}
	}
}

// wake tells every waiter under keys of stream that a fact was filed.
func (x *Index) wake(stream facts.StreamKey, keys []slotKey) {
	if len(keys) == 0 {
		return
	}
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	for _, k := range keys {
		for w := range x.waiters[waitKey{stream: stream, key: k}] {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// waiting is how many waiters are registered (for tests).
func (x *Index) waiting() int {
	x.waitMu.Lock()
	defer x.waitMu.Unlock()
	seen := map[*waiter]struct{}{}
	for _, set := range x.waiters {
		for w := range set {
			seen[w] = struct{}{}
		}
	}
	return len(seen)
}
