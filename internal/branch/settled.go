package branch

import (
	"context"
	"slices"
)

// settledMsg asks to be told once target's earlier writes are in Git.
type settledMsg struct {
	target TargetKey
	fn     func(head string)
}

// WhenSettled calls fn, from the worker's goroutine, once every write and
// sweep of target queued before this call has reached the remote, or was
// dropped with its target. It never closes a window early: writes go out
// on their usual schedule, and fn waits for them. A watch stores its resume
// point with it, so a crash never skips a change that was not in Git yet.
// fn must not block; a worker that stops first never calls it.
//
// fn is given the branch head those writes are in: the commit the worker
// last made or read, which holds them. It is "" when the worker has not
// read the branch yet or the branch has no commit; a cursor stored then
// cannot tell its history apart from another.
func (w *Worker) WhenSettled(ctx context.Context, target TargetKey, fn func(head string)) error {
	return w.send(ctx, settledMsg{target: target, fn: fn})
}

// notifySettled answers the waiters whose target holds no window opened
// before them.
func (c *Core) notifySettled() {
	kept := c.settleWaiters[:0]
	for _, s := range c.settleWaiters {
		if c.holdsBefore(s.Target, s.UpTo) {
			kept = append(kept, s)
			continue
		}
		c.notify(Outcome{Kind: OutcomeSettled, Target: s.Target, Waiter: s.ID})
	}
	clear(c.settleWaiters[len(kept):])
	c.settleWaiters = kept
}

// holdsBefore reports whether the open or a pending window of target was
// opened before sequence upTo, or holds what such a window held. A window
// another absorbed keeps living in the earlier one, so the answer errs on
// waiting longer; a full replay window's sweeps live on in the later
// window that names it (Core.finalizeFull).
func (c *Core) holdsBefore(target TargetKey, upTo uint64) bool {
	holds := func(w *window) bool {
		if w == nil || w.target != target {
			return false
		}
		return w.seq < upTo || slices.ContainsFunc(w.absorbed, func(seq uint64) bool { return seq < upTo })
	}
	return holds(c.window) || slices.ContainsFunc(c.pending, holds)
}

// settledHead is the branch head the settled writes are in, "" when the
// worker does not know it.
func (w *Worker) settledHead() string {
	if !w.state.known {
		return ""
	}
	return w.state.head
}
