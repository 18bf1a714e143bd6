package branch

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// replayState is the core's part of a conflict replay: the window whose
// commit met a branch another writer moved, how many times it has, and
// when it is tried again on the new head. While a replay waits, the Commit
// stays in flight: no other window goes out before it, as when the
// executor waited inline, but events keep arriving and windows keep
// closing meanwhile.
type replayState struct {
	// Seq is the window waiting; At is when it is committed again (zero
	// when no replay waits).
	Seq uint64
	At  time.Time
	// Conflicts counts the conflicts of the window in flight.
	Conflicts int
	// Backoff spaces the replays: from CoreConfig.ConflictBackoff, with
	// its jitter drawn by the executor (ConflictEvent.Jitter).
	Backoff wait.Backoff
}

// conflictBackoff is the schedule of conflict replays, without the jitter
// the executor draws.
func (c CoreConfig) conflictBackoff() wait.Backoff {
	b := c.ConflictBackoff
	b.Jitter = 0
	return b
}

// waiting reports whether a replay waits for its time.
func (r *replayState) waiting() bool { return !r.At.IsZero() }

// conflicted answers a conflict of the first window of the last Commit: a
// replay on a fresh head after a growing, jittered wait (a writer that
// moved the branch may be moving it again, and two writers that collide
// must not retry in step), or, at MaxAttempts, a failure like any other:
// the writes are kept for the retry backoff.
func (c *Core) conflicted(now time.Time, e ConflictEvent) {
	win := c.pendingWindow(e.Seq)
	c.replay.Conflicts++
	if win == nil || c.replay.Conflicts >= c.conf.MaxAttempts {
		c.endReplay()
		c.inFlight = false
		if win == nil || c.failed(now, win, FailedEvent{Seq: e.Seq, Err: e.Err, Jitter: e.Jitter}) {
			c.push(now, true)
		}
		return
	}
	delay := c.replay.Backoff.Step()
	delay += time.Duration(e.Jitter * c.conf.ConflictBackoff.Jitter * float64(delay))
	c.replay.Seq, c.replay.At = e.Seq, now.Add(delay)
	c.notify(Outcome{Kind: OutcomeReplaying, Target: win.target, Err: e.Err, RetryIn: delay})
}

// replayIfDue commits the waiting window again once its wait is over.
func (c *Core) replayIfDue(now time.Time) {
	if !c.replay.waiting() || now.Before(c.replay.At) {
		return
	}
	c.replay.At = time.Time{}
	if win := c.pendingWindow(c.replay.Seq); win != nil {
		c.emit(Commit{Windows: []*window{win}})
		return
	}
	c.endReplay() // its target was removed meanwhile
	c.inFlight = false
	c.push(now, true)
}

// endReplay forgets the replay of the window that was in flight: it went
// through, failed, or the worker stops.
func (c *Core) endReplay() {
	c.replay = replayState{Backoff: c.conf.conflictBackoff()}
}

// chainRefused answers a chain the forge did not take: nothing of it is on
// the branch, so its first window goes alone, which reads the branch
// again and answers conflicts and failures as it always does.
func (c *Core) chainRefused(e ChainRefusedEvent) {
	if win := c.pendingWindow(e.Seq); win != nil {
		c.emit(Commit{Windows: []*window{win}})
	}
}
