package branch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/retry"
)

// CoreConfig is what the Core decides with; it does not change while the
// core runs.
type CoreConfig struct {
	// Committer authors the writes that name nobody.
	Committer Author
	// BufferMax closes a window once its writes hold this many bytes.
	BufferMax int
	// PushBurst commits go out at once; beyond that one per PushInterval.
	PushBurst    int
	PushInterval time.Duration
	// RetryBackoff and MaxRetryBackoff bound the wait before a retry.
	RetryBackoff, MaxRetryBackoff time.Duration
	// MaxAttempts bounds the commits of one window that meet a moved
	// branch before its writes are kept for a retry; ConflictBackoff
	// spaces them.
	MaxAttempts     int
	ConflictBackoff wait.Backoff
}

// retryBackoff is the schedule of retries after a failed commit: from
// RetryBackoff, doubling to MaxRetryBackoff. It draws no jitter of its
// own: the executor draws it and hands it in (FailedEvent.Jitter), so the
// core decides the same way every time it is told the same events.
func (c CoreConfig) retryBackoff() wait.Backoff {
	b := retry.Exponential(c.RetryBackoff, c.MaxRetryBackoff)
	b.Jitter = 0
	return b
}

// Core is the decisions of one branch worker: windows, authors, pending
// writes, coalescing, push budget, CommitRequests, settle and flush
// waiters, parking and retry backoff. It is a state machine: Step takes an
// event and the time and returns actions as plain data; it does no I/O,
// reads no clock and starts no goroutine. Its state is plain data that
// round-trips through JSON (MarshalJSON), so it can be journaled.
type Core struct {
	conf    CoreConfig
	window  *window
	pending []*window
	budget  pushBudget
	// retryAt is when pending commits are tried again after the forge
	// failed; parked holds the same per target, for failures of its own.
	retryAt time.Time
	parked  map[TargetKey]time.Time
	retry   wait.Backoff
	// windowSeq numbers windows as they open; settleWaiters wait for the
	// windows opened before them (WhenSettled).
	windowSeq     uint64
	settleWaiters []waiter
	flushers      []waiter
	// commitRequests are the CommitRequests waiting for a window they may
	// close.
	commitRequests []*Request
	// stopping is set once the executor stops: what the core holds is
	// pushed now, not gathered (gathering).
	stopping bool
	// inFlight is set while a Commit action waits for its result, and
	// while a replay of its window waits.
	inFlight bool
	replay   replayState
	// lastInto is the seq of the window the last write or sweep went
	// into (LastWindow), which a full window's close may have left
	// behind by opening the next one.
	lastInto uint64

	// Silence, Queued and ChainLimit are what the executor observes
	// outside the core, set before each Step: the commit window as the
	// forge's request budget widens it (commitWindow), how many events
	// wait behind this one, and the most windows one Commit may carry now
	// (the forge's forges.ChainCommitter limit, which may change: a Gitea
	// forge whose pushes are refused falls back to its API's shorter
	// chains; 0 or 1 commits one at a time).
	Silence    time.Duration
	Queued     int
	ChainLimit int

	// out collects the actions of the current Step.
	out []Action
}

// waiter is a settle or flush waiter: ID names it to the executor, which
// holds its callback; a settle waiter waits for the windows of Target
// opened before sequence UpTo.
type waiter struct {
	ID     uint64
	Target TargetKey
	UpTo   uint64
}

// NewCore is a core holding nothing.
func NewCore(conf CoreConfig) *Core {
	return &Core{conf: conf, budget: newPushBudget(conf.PushBurst, conf.PushInterval), retry: conf.retryBackoff(),
		parked: map[TargetKey]time.Time{}, replay: replayState{Backoff: conf.conflictBackoff()}}
}

// Step applies ev at now and returns what the executor must do, in order;
// the last action is always the Schedule of the next TickEvent.
func (c *Core) Step(now time.Time, ev Event) []Action {
	switch e := ev.(type) {
	case WriteEvent:
		c.openWindow(e.Target, c.authorOf(e.Author), now).add(e.Write, now)
		c.lastInto = c.window.seq
		if c.window.bytes >= c.conf.BufferMax {
			c.finalizeFull(now)
		}
	case SyncEvent:
		if e.Sweep != nil {
			c.openWindow(e.Target, c.conf.Committer, now).addSweep(*e.Sweep, !e.CloseWindow, now)
			c.lastInto = c.window.seq
		}
		if e.CloseWindow && c.window != nil && c.window.target == e.Target {
			c.finalize(now)
		}
	case AttachEvent:
		c.attach(e.Request, now)
	case TickEvent:
		c.tick(now)
	case TargetEvent:
		c.updateTarget(e)
	case SettleEvent:
		c.settleWaiters = append(c.settleWaiters, waiter{ID: e.ID, Target: e.Target, UpTo: c.windowSeq})
		c.notifySettled()
	case FlushEvent:
		c.flushers = append(c.flushers, waiter{ID: e.ID, Target: e.Target})
		if c.window != nil && c.window.target == e.Target {
			c.finalize(now)
		} else {
			c.push(now, false)
		}
	case CloseEvent:
		c.finalize(now)
	case StopEvent:
		c.stop(now, e.Discard)
	case StoppedEvent:
		c.stopped()
	case CommittedEvent:
		c.committed(now, e)
	case ConflictEvent:
		c.conflicted(now, e)
	case ChainRefusedEvent:
		c.chainRefused(e)
	case FailedEvent:
		c.inFlight = false
		c.endReplay()
		if win := c.pendingWindow(e.Seq); win == nil || c.failed(now, win, e) {
			c.push(now, true)
		}
	}
	c.emit(Schedule{At: c.wake(now)})
	out := c.out
	c.out = nil
	return out
}

func (c *Core) emit(a Action) { c.out = append(c.out, a) }

func (c *Core) notify(o Outcome) { c.emit(Notify{Outcome: o}) }

// authorOf maps "no actor" (the zero Author) to the configured committer,
// so configured-author writes and a replay's sweep share a window.
func (c *Core) authorOf(a Author) Author {
	if a.Name == "" {
		return c.conf.Committer
	}
	return a
}

// openWindow returns the window for (target, author), finalizing another
// one first: a window never mixes authors or targets.
func (c *Core) openWindow(target TargetKey, author Author, now time.Time) *window {
	if c.window != nil && !c.window.accepts(target, author) {
		c.finalize(now)
	}
	if c.window == nil {
		c.window = newWindow(target, author, now)
		c.window.seq = c.windowSeq
		c.windowSeq++
		c.bindWaiting(c.window)
	}
	return c.window
}

func (c *Core) updateTarget(e TargetEvent) {
	switch {
	case e.Suspend:
		c.dropWrites(e.Target, "the GitTarget was suspended (spec.suspend) before the commit was pushed")
	case e.Remove:
		c.dropWrites(e.Target, "the GitTarget is no longer mirrored by this branch worker")
	default:
		return
	}
	c.notifySettled()
	c.notifyFlushers(nil, nil)
}

// dropWrites forgets the target's open window and pending commits, and
// fails the CommitRequests waiting on them with why.
func (c *Core) dropWrites(t TargetKey, why string) {
	c.dropRequests(&t, why)
	if c.window != nil && c.window.target == t {
		c.window = nil
	}
	kept := c.pending[:0]
	for _, p := range c.pending {
		if p.target != t {
			kept = append(kept, p)
		}
	}
	clear(c.pending[len(kept):])
	c.pending = kept
}

func (c *Core) tick(now time.Time) {
	c.requestsDue(now)
	if c.window != nil && !now.Before(c.window.closesAt(c.Silence)) {
		c.finalize(now)
	} else {
		c.push(now, false)
	}
	c.replayIfDue(now)
}

// finalize closes the open window and commits what is due.
func (c *Core) finalize(now time.Time) {
	if c.window != nil && !c.window.empty() {
		c.pending = append(c.pending, c.window)
	}
	c.window = nil
	c.push(now, false)
	c.notifySettled() // an empty window closed, or a push was held back
}

// finalizeFull closes a window its writes filled. A replay larger than a
// window is committed in parts, and the sweeps of the streams that already
// finished move on to the window that continues the replay, so they delete
// in the replay's last commit, once every stream has reported what is
// present; after a restart with nothing changed the parts before it then
// hold only files already there (the worker plans them without reading the
// files the replay has not reached yet; see branchState.settle).
//
// A carried sweep keeps its meaning. It deletes what its stream did not
// report, and nothing that came after it: an object created since (a
// live write in the filled window, committed there) joins its present set,
// as the later window's own writes are kept by planning sweeps first. And
// the later window answers for the filled one's sweeps: it names the
// filled window among those it holds (absorbed), so the journal keeps the
// sweep's entry and a settle waiter waits until the sweep is committed.
func (c *Core) finalizeFull(now time.Time) {
	full := c.window
	var carried []Sweep
	if full.replaying && len(full.sweeps) > 0 {
		carried, full.sweeps = full.sweeps, nil
		for i := range carried {
			carried[i].Names = append(slices.Clip(carried[i].Names), full.coveredUpserts(carried[i].Scope)...)
		}
	}
	c.finalize(now)
	if len(carried) > 0 {
		next := c.openWindow(full.target, full.author, now)
		next.sweeps = append(next.sweeps, carried...)
		next.reconcile, next.replaying = true, true
		next.absorbed = append(append(next.absorbed, full.seq), full.absorbed...)
	}
}

// coalesce merges each pending window into the previous pending window of
// its target when that one absorbs it. Windows pile up while the forge asks
// to wait or the push budget spaces a backlog; merged, they land as fewer
// commits, which is what a rate limit needs. Only windows with no window of
// the same target between them merge, so the order of writes to one target
// never changes.
func (c *Core) coalesce() {
	last := map[TargetKey]*window{}
	kept := c.pending[:0]
	for _, win := range c.pending {
		if prev, ok := last[win.target]; ok && prev.absorbs(win, c.conf.BufferMax) {
			prev.absorb(win)
			continue
		}
		last[win.target] = win
		kept = append(kept, win)
	}
	clear(c.pending[len(kept):])
	c.pending = kept
}

// push asks for the next pending windows to be committed, oldest first,
// while the push budget allows; resume continues a push whose last Commit
// just ended. A failure of the forge itself holds the whole branch back
// for a backoff; a failure that belongs to one GitTarget (content it
// cannot plan) parks only that target's windows, so the others keep
// committing.
func (c *Core) push(now time.Time, resume bool) {
	if c.inFlight {
		return // the running Commit's result resumes the push
	}
	if !resume {
		if c.gathering() {
			return // the queued events close more windows; they go out together
		}
		c.coalesce()
	}
	if now.Before(c.retryAt) {
		for _, win := range c.pending {
			c.failHeld(win, c.retryAt)
		}
		return
	}
	for i, win := range c.pending {
		if until, ok := c.parked[win.target]; ok && now.Before(until) {
			c.failHeld(win, until)
			continue // keeps this target's windows in order behind the parked one
		}
		// The budget only spaces a backlog: a single window waiting alone
		// goes out at once, so an editor waiting for each change to land
		// never waits on the budget.
		if wait := c.budget.wait(now); wait > 0 && len(c.pending) > 1 {
			return
		}
		c.inFlight = true
		c.emit(Commit{Windows: c.chainable(i, now)})
		return
	}
	c.notifyFlushers(nil, nil)
	c.notifySettled()
}

// committed takes the windows that went through out of pending and goes
// on pushing.
func (c *Core) committed(now time.Time, e CommittedEvent) {
	c.inFlight = false
	c.endReplay()
	for _, r := range e.Windows {
		win := c.pendingWindow(r.Seq)
		if win == nil {
			continue
		}
		win.commit, win.refused = r.Commit, r.Refused
		c.removePending(win)
		c.wentThrough(win, r.Committed)
	}
	if len(e.Windows) > 0 && (e.Chained || e.Windows[0].Committed) {
		c.budget.spend(now)
	}
	c.push(now, true)
}

func (c *Core) pendingWindow(seq uint64) *window {
	for _, p := range c.pending {
		if p.seq == seq {
			return p
		}
	}
	return nil
}

// removePending drops win from pending. slices.Delete clears the slot it
// frees: append(pending[:i], pending[i+1:]...) left the last one pointing
// at a committed window, whose writes (a whole replay's rendered YAML) then
// lived until another window took its place.
func (c *Core) removePending(win *window) {
	if i := slices.Index(c.pending, win); i >= 0 {
		c.pending = slices.Delete(c.pending, i, i+1)
	}
}

// wentThrough settles a window that left pending: committed, or with
// nothing to commit.
func (c *Core) wentThrough(win *window, committed bool) {
	delete(c.parked, win.target)
	c.pushed(win, committed)
	c.notify(Outcome{Kind: OutcomeWentThrough, Target: win.target})
	c.retry = c.conf.retryBackoff()
}

// failed keeps the window for a later retry, waiting as long as the forge
// asked or with jittered exponential backoff: up to retry.Jitter of the
// delay again, as the event's Jitter draws it, so workers that failed
// together do not retry together. It reports whether the failure is the
// target's own (the push may go on with other targets) rather than the
// forge's.
func (c *Core) failed(now time.Time, win *window, e FailedEvent) bool {
	err := e.Err
	delay := c.retry.Step()
	delay += time.Duration(e.Jitter * retry.Jitter * float64(delay))
	if ra := forges.RetryAfter(err); ra > delay {
		delay = ra
	}
	until := now.Add(delay)
	var forgeErr *forges.Error
	targetOnly := !errors.As(err, &forgeErr)
	if targetOnly {
		c.parked[win.target] = until
	} else {
		c.retryAt = until
	}
	c.failRequest(win, err)
	if !targetOnly {
		// The whole branch waits; the push stops here.
		for _, held := range c.pending {
			c.failHeld(held, until)
		}
	}
	c.notify(Outcome{Kind: OutcomeFailed, Target: win.target, Err: err, RetryIn: delay})
	if targetOnly {
		c.notifyFlushers(&win.target, wrapTarget(win.target, err))
	} else {
		c.notifyFlushers(nil, wrapTarget(win.target, err))
	}
	return targetOnly
}

// wake is when the core next needs a TickEvent: the earliest of the open
// window's silence deadline, a CommitRequest's deadline, the push budget,
// a retry; an hour from now when nothing waits. A commit under way wakes
// nothing: its result resumes the push.
func (c *Core) wake(now time.Time) time.Time {
	wake := now.Add(time.Hour)
	if c.window != nil {
		wake = c.window.closesAt(c.Silence)
	}
	if due, ok := c.nextDeadline(); ok && due.Before(wake) {
		wake = due
	}
	if due, ok := c.nextPush(now); ok && due.Before(wake) && !c.gathering() && !c.inFlight {
		wake = due
	}
	if c.replay.waiting() && c.replay.At.Before(wake) {
		wake = c.replay.At
	}
	return wake
}

// nextPush is when a pending window can next be tried: after the forge's
// retry, the push budget, and its target's parking.
func (c *Core) nextPush(now time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, win := range c.pending {
		due := c.retryAt
		if until := c.parked[win.target]; until.After(due) {
			due = until
		}
		if !found || due.Before(next) {
			next, found = due, true
		}
	}
	if !found {
		return next, false
	}
	if budget := now.Add(c.budget.wait(now)); budget.After(next) {
		next = budget
	}
	return next, true
}

// stop pushes what the core holds once more, regardless of budget, parking
// and backoff, or drops it when discarding.
func (c *Core) stop(now time.Time, discard bool) {
	c.stopping = true
	if c.replay.waiting() {
		// The stop's last try replaces the replay's wait.
		c.endReplay()
		c.inFlight = false
	}
	if discard {
		c.dropRequests(nil, "the branch worker was replaced before the commit was pushed (its GitProvider changed); the replay commits the changes")
		c.pending, c.window = nil, nil
		return
	}
	c.retryAt = time.Time{}
	c.parked = map[TargetKey]time.Time{}
	c.budget = newPushBudget(len(c.pending)+1, 0)
	c.finalize(now)
}

// stopped ends every request and flush still waiting.
func (c *Core) stopped() {
	c.dropRequests(nil, "the branch worker stopped before the commit was pushed")
	for _, f := range c.flushers {
		c.notify(Outcome{Kind: OutcomeFlushed, Target: f.Target, Waiter: f.ID, Err: errStopped})
	}
	c.flushers = nil
}

var errStopped = errors.New("branch worker stopped")

// holds reports whether the core holds writes not committed.
func (c *Core) holds() bool { return len(c.pending) > 0 || c.window != nil }

// held lists the windows the core holds: the pending ones, oldest first,
// then the open one.
func (c *Core) held() []*window {
	if c.window == nil {
		return c.pending
	}
	return append(c.pending[:len(c.pending):len(c.pending)], c.window)
}

// notifyFlushers answers flush waiters whose target has nothing pending,
// or, with err, those of target (all when target is nil).
func (c *Core) notifyFlushers(target *TargetKey, err error) {
	kept := c.flushers[:0]
	for _, f := range c.flushers {
		failed := err != nil && (target == nil || *target == f.Target)
		if failed || (err == nil && !c.hasPending(f.Target)) {
			c.notify(Outcome{Kind: OutcomeFlushed, Target: f.Target, Waiter: f.ID, Err: err})
			continue
		}
		kept = append(kept, f)
	}
	c.flushers = kept
}

func (c *Core) hasPending(t TargetKey) bool {
	for _, p := range c.pending {
		if p.target == t {
			return true
		}
	}
	return false
}

func wrapTarget(t TargetKey, err error) error {
	return fmt.Errorf("committing for GitTarget %s: %w", t, err)
}
