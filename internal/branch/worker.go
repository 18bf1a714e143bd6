package branch

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/forges"
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
	// Outcomes is the stream every outcome leaves on, in the order the
	// worker reached it: commits, plans, failures, CommitRequest ends and
	// the answers to WhenSettled and Flush (Outcome.Answer). Its consumer
	// must keep reading until the worker has stopped: a full stream makes
	// the worker wait (counted by Observer.OutcomeWait), it never drops an
	// outcome. Nil answers the waiters on the worker's goroutine and drops
	// the rest (tests of the worker alone).
	Outcomes chan<- Outcome

	// PullRequest, when set, turns on pull-request mode: Key.Branch is the
	// head branch, started from PullRequest.Base, and the worker keeps one
	// open pull request from it into the base (issue 25). Nil: direct mode.
	PullRequest *PullRequestSettings

	// Journal, when set, makes the worker journal what its core accepts
	// (issue 24): it restores the branch's journal before taking events,
	// appends the records of what it takes before any commit runs, trims
	// what a commit settled, and stores cursors with the journal
	// (JournalCursors). Nil: no journal I/O at all, as with one replica.
	Journal Journal
	// ClaimToken is the token of the branch's claim (redisstore.Claims)
	// the engine holds for this worker; every journal write is fenced by it.
	ClaimToken string
	// JournalSealer seals sensitive writes in the journal (NewAEADSealer
	// with the key every replica shares); a journal needs one
	// (CheckJournal).
	JournalSealer JournalSealer
	// JournalObserver is told the journal's depth and age (metrics).
	JournalObserver JournalObserver
	// JournalLinger is how long a record may wait to share an append
	// (DefaultJournalLinger when zero).
	JournalLinger time.Duration
}

// DefaultConflictBackoff waits 100 ms before the first conflict replay,
// doubling up to 5 s, each wait plus up to half of it again at random.
var DefaultConflictBackoff = retry.Exponential(100*time.Millisecond, 5*time.Second)

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
	if c.JournalLinger <= 0 {
		c.JournalLinger = DefaultJournalLinger
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	if c.Committer.Name == "" {
		c.Committer = Author{Name: "GitOps Reverser", Email: "noreply@configbutler.ai"}
	}
	c.Committer.Kind = AuthorCommitter
}

// Worker is the single writer of one branch: the executor of its Core.
// Run is its one goroutine; it turns each message into an event for the
// core and runs the actions the core returns. It owns everything that is
// not a decision: the branch head, the per-target indexes and the blob
// cache (state), the forge, the clock and the outcome stream.
type Worker struct {
	cfg Config
	in  chan any
	// Everything below is owned by the Run goroutine.
	core  *Core
	state *branchState
	// waiters hold the replies of the waiters the core names by id;
	// lastWaiter numbers them.
	waiters    map[uint64]func(Outcome)
	lastWaiter uint64
	// wake is when the core asked for its next TickEvent.
	wake time.Time
	// discard is set by Discard, from another goroutine.
	discard atomic.Bool
	// stopped closes when Run has returned: nothing reads in any more.
	stopped chan struct{}
	// jr is the journal's state, nil without a journal; restoreBy is when
	// a restored journal is committed at the latest (journalRestoreWait).
	jr        *journalExec
	restoreBy time.Time
	// pr is pull-request mode's state, nil in direct mode (pulls.go).
	pr *pullExec
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

// New builds a worker; Run starts it.
func New(cfg Config) *Worker {
	cfg.defaults()
	// The worker names itself on every line it logs; callers must not add
	// the key again (a JSON line with a key twice is refused by strict
	// parsers).
	cfg.Log = cfg.Log.WithValues("worker", cfg.Key.String())
	w := &Worker{
		cfg: cfg,
		in:  make(chan any, cfg.QueueSize),
		core: NewCore(CoreConfig{Committer: cfg.Committer, BufferMax: cfg.BufferMax, PushBurst: cfg.PushBurst,
			PushInterval: cfg.PushInterval, RetryBackoff: cfg.RetryBackoff, MaxRetryBackoff: cfg.MaxRetryBackoff,
			MaxAttempts: cfg.MaxAttempts, ConflictBackoff: cfg.ConflictBackoff}),
		state:   newBranchState(cfg.Forge, cfg.Key.Branch),
		waiters: map[uint64]func(Outcome){},
		stopped: make(chan struct{}),
		jr:      newJournalExec(cfg),
		pr:      newPullExec(cfg),
	}
	if cfg.PullRequest != nil {
		w.state.startFrom = cfg.PullRequest.Base // a new head branch starts from the base
	}
	return w
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
//
// A caller whose context ended is stopping, and its write is refused even
// when the queue has room (send's select would pick at random): a watch
// stream stopped for a handover cuts short the wait for a change's author,
// and queued, the change would be committed unresolved by the stopping
// owner and its cursor passed. Refused, the cursor stays before it, and
// the next owner's resumed watch delivers it again and names its author
// from the facts every replica shares.
func (w *Worker) Write(ctx context.Context, target TargetKey, author Author, wr Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
