package branch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/retry"
)

// Config is everything a worker is built from.
type Config struct {
	Key   Key
	Forge forges.Forge
	// Committer commits every change, and authors those with no actor.
	Committer Author
	Messages  *Messages
	Signer    forges.Signer
	// CommitWindow is the silence that closes an open window.
	CommitWindow time.Duration
	// BufferMax closes a window once its writes hold this many bytes.
	BufferMax int
	// PushBurst commits go out at once; beyond that one per PushInterval.
	PushBurst    int
	PushInterval time.Duration
	// MaxAttempts bounds the conflict replays of one commit before the
	// writes are kept for a later retry.
	MaxAttempts int
	// ConflictBackoff spaces the conflict replays of one commit
	// (DefaultConflictBackoff when zero; MaxAttempts bounds how many).
	ConflictBackoff wait.Backoff
	// Sleep waits between conflict replays and reports whether d passed
	// before ctx ended; nil waits on Clock.
	Sleep func(ctx context.Context, d time.Duration) bool
	// RetryBackoff and MaxRetryBackoff bound the wait before a retry; up to
	// half of it again is added as jitter, so workers that failed together
	// do not retry together.
	RetryBackoff, MaxRetryBackoff time.Duration
	// Requests, when set, reads how many HTTP requests the forge has made,
	// for requests-per-commit metrics.
	Requests func() int64
	// QueueSize is how many events wait for the loop before senders block.
	QueueSize int
	Clock     clock.Clock
	Log       logr.Logger
	Observer  Observer
	// OnCommit is told about every commit that reached the remote.
	OnCommit func(CommitInfo)
	// OnError is told when a target's writes could not be committed.
	OnError func(TargetKey, error)
	// OnSettled is told when a target's window went through: committed, or
	// already all in Git so nothing was committed. Either way an earlier
	// OnError of that target no longer holds; a retry that finds nothing
	// to change makes no commit, so OnCommit alone would never say so.
	OnSettled func(TargetKey)
	// OnPlanned is told, for each planned window, which objects it carried
	// and which of those the planner would not write safely; the rest of
	// the window is committed.
	OnPlanned func(target TargetKey, carried []manifest.ObjectID, refusals []manifest.Refusal)
}

// DefaultConflictBackoff waits 100 ms before the first conflict replay,
// doubling up to 5 s, each wait plus up to half of it again at random.
var DefaultConflictBackoff = retry.Exponential(100*time.Millisecond, 5*time.Second)

// retryBackoff is the schedule of retries after a failed commit: from
// RetryBackoff, doubling to MaxRetryBackoff, jittered.
func (c *Config) retryBackoff() wait.Backoff {
	return retry.Exponential(c.RetryBackoff, c.MaxRetryBackoff)
}

func (c *Config) defaults() {
	if c.Messages == nil {
		c.Messages, _ = ParseMessages("", "", "")
	}
	if c.CommitWindow <= 0 {
		c.CommitWindow = 5 * time.Second
	}
	if c.BufferMax <= 0 {
		c.BufferMax = 8 << 20
	}
	if c.PushBurst <= 0 {
		c.PushBurst = 3
	}
	if c.PushInterval == 0 {
		c.PushInterval = time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.ConflictBackoff.Duration <= 0 {
		c.ConflictBackoff = DefaultConflictBackoff
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 500 * time.Millisecond
	}
	if c.MaxRetryBackoff <= 0 {
		c.MaxRetryBackoff = time.Minute
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 1024
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Committer.Name == "" {
		c.Committer = Author{Name: "GitOps Reverser", Email: "noreply@configbutler.ai"}
	}
	c.Committer.Kind = AuthorCommitter
}

// Worker is the single writer of one branch.
type Worker struct {
	cfg Config
	in  chan any
	// Everything below is owned by the Run goroutine.
	state   *branchState
	window  *window
	pending []*window
	budget  *pushBudget
	// retryAt is when pending commits are tried again after the forge
	// failed; parked holds the same per target, for failures of its own.
	retryAt  time.Time
	parked   map[TargetKey]time.Time
	retry    wait.Backoff
	flushers []flushWaiter
	// windowSeq numbers windows as they open; settleWaiters wait for the
	// windows opened before them (WhenSettled).
	windowSeq     uint64
	settleWaiters []settleWaiter
	// requests are the CommitRequests waiting for a window they may close.
	commitRequests []*Request
	// stopping is set once the loop's context ended: what it holds is
	// pushed now, not gathered (gathering).
	stopping bool
	// discard is set by Discard, from another goroutine.
	discard atomic.Bool
	// stopped closes when Run has returned: nothing reads in any more.
	stopped chan struct{}
}

type writeMsg struct {
	target TargetKey
	author Author
	write  Write
}

type syncMsg struct {
	target      TargetKey
	sweep       *Sweep
	closeWindow bool
}

type targetMsg struct {
	target Target
	remove bool
	// suspend drops what the worker holds for the target and keeps it
	// registered: the GitTarget was suspended.
	suspend bool
}

type flushMsg struct {
	target TargetKey
	done   chan error
}

type flushWaiter struct {
	target TargetKey
	done   chan error
}

// New builds a worker; Run starts it.
func New(cfg Config) *Worker {
	cfg.defaults()
	// The worker names itself on every line it logs; callers must not add
	// the key again (a JSON line with a key twice is refused by strict
	// parsers).
	cfg.Log = cfg.Log.WithValues("worker", cfg.Key.String())
	return &Worker{
		cfg:     cfg,
		in:      make(chan any, cfg.QueueSize),
		state:   newBranchState(cfg.Forge, cfg.Key.Branch),
		budget:  newPushBudget(cfg.PushBurst, cfg.PushInterval),
		retry:   cfg.retryBackoff(),
		parked:  map[TargetKey]time.Time{},
		stopped: make(chan struct{}),
	}
}

// QueueDepth is how many events wait for the loop.
func (w *Worker) QueueDepth() int { return len(w.in) }

// ErrWorkerStopped: the worker's loop has ended (it was replaced or the
// operator is stopping); nothing sent to it is handled.
var ErrWorkerStopped = errors.New("the branch worker has stopped")

func (w *Worker) send(ctx context.Context, msg any) error {
	select {
	case <-w.stopped:
		return ErrWorkerStopped
	default:
	}
	select {
	case w.in <- msg:
		return nil
	case <-w.stopped:
		return ErrWorkerStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Write queues an object write. It blocks while the queue is full, so a
// burst slows the watch down instead of dropping anything.
func (w *Worker) Write(ctx context.Context, target TargetKey, author Author, wr Write) error {
	return w.send(ctx, writeMsg{target: target, author: author, write: wr})
}

// Sync queues a replay's sweep (when sweep is set) and, with closeWindow,
// asks for the window to close: the target's replay is complete.
func (w *Worker) Sync(ctx context.Context, target TargetKey, sweep *Sweep, closeWindow bool) error {
	return w.send(ctx, syncMsg{target: target, sweep: sweep, closeWindow: closeWindow})
}

// SetTarget registers or updates a GitTarget this worker writes.
func (w *Worker) SetTarget(ctx context.Context, t Target) error {
	return w.send(ctx, targetMsg{target: t})
}

// rereadMsg asks the worker to read the branch again before its next plan.
type rereadMsg struct{}

// Reread makes the worker read the branch head and files again before it
// plans the next window, instead of trusting what it last saw: a resync
// requested because the branch was rewritten under a running operator
// must compare the replay with what Git holds now.
func (w *Worker) Reread(ctx context.Context) error {
	return w.send(ctx, rereadMsg{})
}

// RemoveTarget forgets a GitTarget; its open window is dropped.
func (w *Worker) RemoveTarget(ctx context.Context, t TargetKey) error {
	return w.send(ctx, targetMsg{target: Target{Key: t}, remove: true})
}

// Suspend drops everything the worker holds for a GitTarget whose
// spec.suspend became true: its open window, its pending commits and the
// CommitRequests waiting on them. The target stays registered; its replay
// on resume writes what was dropped.
func (w *Worker) Suspend(ctx context.Context, t TargetKey) error {
	return w.send(ctx, targetMsg{target: Target{Key: t}, suspend: true})
}

// Flush closes the target's open window and waits until everything pending
// for it reached the remote, or the attempt failed.
func (w *Worker) Flush(ctx context.Context, target TargetKey) error {
	done := make(chan error, 1)
	if err := w.send(ctx, flushMsg{target: target, done: done}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run is the event loop. On return it has tried once more to commit what it
// holds, so a clean shutdown loses nothing that could be written.
func (w *Worker) Run(ctx context.Context) error {
	defer close(w.stopped)
	timer := w.cfg.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.cfg.Observer.QueueDepth(w.cfg.Key, len(w.in))
		w.resetTimer(timer)
		select {
		case <-ctx.Done():
			w.shutdown()
			return nil
		case msg := <-w.in:
			w.handle(ctx, msg)
		case <-timer.C():
			w.tick(ctx)
		}
	}
}

func (w *Worker) handle(ctx context.Context, msg any) {
	now := w.cfg.Clock.Now()
	switch m := msg.(type) {
	case writeMsg:
		w.openWindow(m.target, w.authorOf(m.author), now).add(m.write, now)
		if w.window.bytes >= w.cfg.BufferMax {
			w.finalize(ctx)
		}
	case syncMsg:
		if m.sweep != nil {
			w.openWindow(m.target, w.cfg.Committer, now).addSweep(*m.sweep, !m.closeWindow, now)
		}
		if m.closeWindow && w.window != nil && w.window.target == m.target {
			w.finalize(ctx)
		}
	case targetMsg:
		w.updateTarget(m)
	case settledMsg:
		w.addSettleWaiter(m)
	case rereadMsg:
		w.state.known = false
	case attachMsg:
		w.attach(ctx, m.req, now)
	case flushMsg:
		w.flushers = append(w.flushers, flushWaiter(m))
		if w.window != nil && w.window.target == m.target {
			w.finalize(ctx)
		} else {
			w.push(ctx)
		}
	}
}

// authorOf maps "no actor" (the zero Author) to the configured committer,
// so configured-author writes and a replay's sweep share a window.
func (w *Worker) authorOf(a Author) Author {
	if a.Name == "" {
		return w.cfg.Committer
	}
	return a
}

// openWindow returns the window for (target, author), finalizing another
// one first: a window never mixes authors or targets.
func (w *Worker) openWindow(target TargetKey, author Author, now time.Time) *window {
	if w.window != nil && !w.window.accepts(target, author) {
		w.finalize(context.Background())
	}
	if w.window == nil {
		w.window = newWindow(target, author, now)
		w.window.seq = w.windowSeq
		w.windowSeq++
		w.bindWaiting(w.window)
	}
	return w.window
}

func (w *Worker) updateTarget(m targetMsg) {
	switch {
	case m.suspend:
		w.dropWrites(m.target.Key, "the GitTarget was suspended (spec.suspend) before the commit was pushed")
	case m.remove:
		w.dropWrites(m.target.Key, "the GitTarget is no longer mirrored by this branch worker")
		w.state.removeTarget(m.target.Key)
	default:
		w.state.setTarget(m.target)
		return
	}
	w.notifySettled()
	w.notifyFlushers(nil, nil)
}

// dropWrites forgets the target's open window and pending commits, and
// fails the CommitRequests waiting on them with why.
func (w *Worker) dropWrites(t TargetKey, why string) {
	w.dropRequests(&t, why)
	if w.window != nil && w.window.target == t {
		w.window = nil
	}
	kept := w.pending[:0]
	for _, p := range w.pending {
		if p.target != t {
			kept = append(kept, p)
		}
	}
	clear(w.pending[len(kept):])
	w.pending = kept
}

func (w *Worker) tick(ctx context.Context) {
	now := w.cfg.Clock.Now()
	w.requestsDue(ctx, now)
	if w.window != nil && !now.Before(w.window.closesAt(w.commitWindow())) {
		w.finalize(ctx)
		return
	}
	w.push(ctx)
}

// finalize closes the open window and commits what is due.
func (w *Worker) finalize(ctx context.Context) {
	if w.window != nil && !w.window.empty() {
		w.pending = append(w.pending, w.window)
	}
	w.window = nil
	w.push(ctx)
	w.notifySettled() // an empty window closed, or a push was held back
}

// coalesce merges each pending window into the previous pending window of
// its target when that one absorbs it. Windows pile up while the forge asks
// to wait or the push budget spaces a backlog; merged, they land as fewer
// commits, which is what a rate limit needs. Only windows with no window of
// the same target between them merge, so the order of writes to one target
// never changes.
func (w *Worker) coalesce() {
	last := map[TargetKey]*window{}
	kept := w.pending[:0]
	for _, win := range w.pending {
		if prev, ok := last[win.target]; ok && prev.absorbs(win, w.cfg.BufferMax) {
			prev.absorb(win)
			continue
		}
		last[win.target] = win
		kept = append(kept, win)
	}
	clear(w.pending[len(kept):])
	w.pending = kept
}

// resetTimer wakes the loop at the earliest of: the open window's silence
// deadline, a CommitRequest's deadline, the push budget, a retry.
func (w *Worker) resetTimer(timer clock.Timer) {
	now := w.cfg.Clock.Now()
	wake := now.Add(time.Hour)
	if w.window != nil {
		wake = w.window.closesAt(w.commitWindow())
	}
	if due, ok := w.nextDeadline(); ok && due.Before(wake) {
		wake = due
	}
	if due, ok := w.nextPush(now); ok && due.Before(wake) && !w.gathering() {
		wake = due
	}
	if !timer.Stop() {
		select {
		case <-timer.C():
		default:
		}
	}
	timer.Reset(max(wake.Sub(now), 0))
}

// nextPush is when a pending window can next be tried: after the forge's
// retry, the push budget, and its target's parking.
func (w *Worker) nextPush(now time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, win := range w.pending {
		due := w.retryAt
		if until := w.parked[win.target]; until.After(due) {
			due = until
		}
		if !found || due.Before(next) {
			next, found = due, true
		}
	}
	if !found {
		return next, false
	}
	if budget := now.Add(w.budget.wait(now)); budget.After(next) {
		next = budget
	}
	return next, true
}

// Discard makes the worker, once its context ends, stop without committing
// what it holds. A worker replaced because its settings changed (a signing
// key switched on or rotated, new credentials) must not commit under the
// old ones; its targets replay into the new worker, which restores
// everything it held.
func (w *Worker) Discard() { w.discard.Store(true) }

func (w *Worker) shutdown() {
	w.stopping = true
	if w.discard.Load() {
		if len(w.pending) > 0 || w.window != nil {
			w.cfg.Log.Info("replaced: dropping what was not committed; the targets' replays restore it")
		}
		w.dropRequests(nil, "the branch worker was replaced before the commit was pushed (its GitProvider changed); the replay commits the changes")
		w.pending, w.window = nil, nil
	} else {
		w.flushRemaining()
		w.dropRequests(nil, "the branch worker stopped before the commit was pushed")
	}
	for _, f := range w.flushers {
		f.done <- errors.New("branch worker stopped")
	}
	w.flushers = nil
	if len(w.pending) > 0 {
		w.cfg.Log.Info("stopping with writes not committed; the next replay restores them", "windows", len(w.pending))
	}
}

// flushRemaining tries once more, briefly and regardless of budget and
// backoff, to commit what the worker holds.
func (w *Worker) flushRemaining() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.retryAt = time.Time{}
	w.parked = map[TargetKey]time.Time{}
	w.budget = newPushBudget(len(w.pending)+1, 0)
	w.finalize(ctx)
}

// notifyFlushers answers flush waiters whose target has nothing pending,
// or, with err, those of target (all when target is nil).
func (w *Worker) notifyFlushers(target *TargetKey, err error) {
	kept := w.flushers[:0]
	for _, f := range w.flushers {
		failed := err != nil && (target == nil || *target == f.target)
		if failed || (err == nil && !w.hasPending(f.target)) {
			f.done <- err
			continue
		}
		kept = append(kept, f)
	}
	w.flushers = kept
}

func (w *Worker) hasPending(t TargetKey) bool {
	for _, p := range w.pending {
		if p.target == t {
			return true
		}
	}
	return false
}

func wrapTarget(t TargetKey, err error) error {
	return fmt.Errorf("committing for GitTarget %s: %w", t, err)
}
