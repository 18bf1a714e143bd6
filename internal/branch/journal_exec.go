package branch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/configbutler/gitops-reverser/internal/redisstore"
	"github.com/configbutler/gitops-reverser/internal/retry"
)

// Journal is the durable write queue a worker journals into: one log per
// branch, every write fenced by the branch's claim. redisstore.Journal is
// the implementation; the worker names its branch Key.String() in it.
type Journal interface {
	// Append adds entries and then stores cursors, atomically per batch,
	// while token holds the claim, and returns the IDs of the entries
	// that went in (on an error, those of the batches before it). A
	// wrapped redisstore.ErrNotOwner: the claim is another's.
	Append(ctx context.Context, branch, token string, entries [][]byte, cursors map[string]string) ([]string, error)
	// Trim removes every entry up to upTo and the entries ids, fenced.
	Trim(ctx context.Context, branch, token, upTo string, ids ...string) (int64, error)
	// Read returns the branch's entries, oldest first.
	Read(ctx context.Context, branch string) ([]redisstore.JournalEntry, error)
}

var _ Journal = (*redisstore.Journal)(nil)

// JournalBatch is the most records the executor buffers before it appends
// them, even while events keep coming (a replay's thousands of writes go
// in appends of this size, never one round trip a write). Fewer are
// appended before a commit runs, with cursors, and once the oldest has
// waited Config.JournalLinger.
const JournalBatch = 500

// ErrClaimLost is what Run returns when the journal refused a write
// because another replica holds the branch's claim: the worker committed
// nothing after it learnt so, and stopped (OutcomeLost).
var ErrClaimLost = errors.New("the branch's claim is held by another replica")

// ErrJournalUnsealed refuses a journaled worker without a sealer: the
// first Secret it mirrored could not be journaled, and its cursor would
// pass a write a crash then loses. See Config.CheckJournal.
var ErrJournalUnsealed = errors.New("a journaled branch worker needs a JournalSealer (the shared journal key)")

// journalExec is the executor's side of the journal; nil on a worker
// without one, which then does no journal I/O at all.
type journalExec struct {
	journal Journal
	name    string
	token   string
	codec   JournalCodec
	obs     JournalObserver
	// index says which window each appended entry went into.
	index JournalIndex
	// buffered are records the core took that are not appended yet, in
	// order; cursors go with (after) them in the next append.
	buffered []bufferedRecord
	cursors  map[string]string
	// trim is a trim Redis did not take, tried again with the next.
	trim JournalTrim
	// late is set after an append failed: records appended afterwards may
	// belong to windows committed meanwhile, so the next append settles.
	late bool
	// restoring holds the journal read at start until it is stepped into
	// the core (restoreDue).
	restoring []JournalItem
	// lost is set once the journal refused a write as not the owner's.
	lost bool
	// headRead is set once cursorHead asked the forge for the head.
	headRead bool
	// failing is set while Redis does not answer: no journal write is
	// tried before retryAt, which backoff spaces.
	failing bool
	retryAt time.Time
	backoff wait.Backoff
}

type bufferedRecord struct {
	rec  JournalRecord
	data []byte
}

// CheckJournal says whether the journal settings can run: a journal needs
// a claim token and a sealer. Sensitive writes are not left out of the
// journal instead: the cursor stored with the writes around one would
// pass it, and a crash would lose the Secret's change for good.
func (c *Config) CheckJournal() error {
	if c.Journal == nil {
		return nil
	}
	if c.ClaimToken == "" {
		return fmt.Errorf("branch worker %s: a journal without a claim token", c.Key)
	}
	if c.JournalSealer == nil {
		return fmt.Errorf("branch worker %s: %w", c.Key, ErrJournalUnsealed)
	}
	return nil
}

func newJournalExec(cfg Config) *journalExec {
	if cfg.Journal == nil {
		return nil
	}
	obs := cfg.JournalObserver
	if obs == nil {
		obs = nopJournalObserver{}
	}
	return &journalExec{journal: cfg.Journal, name: cfg.Key.String(), token: cfg.ClaimToken,
		codec: JournalCodec{Sealer: cfg.JournalSealer}, obs: obs, cursors: map[string]string{}}
}

// Journaled reports whether the worker journals (Config.Journal): its
// cursors then go with its journal (JournalCursors).
func (w *Worker) Journaled() bool { return w.jr != nil }

// record buffers ev's journal record, taken at now, right after the core
// stepped it (the window it went into is Core.LastWindow then), and
// appends once JournalBatch records wait.
func (w *Worker) record(ctx context.Context, now time.Time, ev Event) {
	if w.jr == nil || w.jr.lost || !Journaled(ev) {
		return
	}
	rec := JournalRecord{At: now, Window: w.core.LastWindow(), Event: ev}
	data, _, err := w.jr.codec.Encode(rec)
	if err != nil {
		// Only a sealer failing gets here (CheckJournal makes sure there
		// is one): the write is committed from memory, not journaled.
		w.cfg.Log.Error(err, "cannot journal a write; it is committed, but a crash before then loses it")
		return
	}
	w.jr.buffered = append(w.jr.buffered, bufferedRecord{rec: rec, data: data})
	if len(w.jr.buffered) >= JournalBatch {
		w.appendJournal(ctx)
	}
}

// DefaultJournalLinger is how long a record waits for others to share its
// append while the worker has nothing queued (Config.JournalLinger): a
// replay whose objects arrive a little slower than the worker takes them
// still goes in appends of many, and a lone write waits this long. A
// crash within it loses no change: the record's cursor is not stored yet,
// so the watch delivers it again.
const DefaultJournalLinger = 10 * time.Millisecond

// appendLingered appends once the oldest buffered record has waited the
// linger; the loop's timer comes back for it otherwise (journalDue).
func (w *Worker) appendLingered(ctx context.Context) {
	if due, ok := w.journalDue(); ok && !w.cfg.Clock.Now().Before(due) {
		w.appendJournal(ctx)
	}
}

// journalDue is when the buffered records are appended at the latest.
func (w *Worker) journalDue() (time.Time, bool) {
	if w.jr == nil || w.jr.lost || len(w.jr.buffered) == 0 {
		return time.Time{}, false
	}
	due := w.jr.buffered[0].rec.At.Add(w.cfg.JournalLinger)
	if w.jr.retryAt.After(due) {
		due = w.jr.retryAt
	}
	return due, true
}

// appendJournal appends what is buffered, records then cursors, in one
// round trip (Journal.Append splits a larger batch), and reports whether
// the worker may go on committing: false once the claim is lost. Redis
// failing keeps the records for a later append and is not tried again
// before a backoff (journalRetry), so an outage costs neither a stall on
// every commit nor a log line every linger; the worker commits on from
// memory meanwhile, and cursors are not stored.
func (w *Worker) appendJournal(ctx context.Context) bool { return w.appendBuffered(ctx, false) }

// appendBuffered is appendJournal; force tries even within the backoff
// (a stopping worker's last append).
func (w *Worker) appendBuffered(ctx context.Context, force bool) bool {
	jr := w.jr
	switch {
	case jr == nil:
		return true
	case jr.lost:
		return false
	case len(jr.buffered) == 0 && len(jr.cursors) == 0,
		!force && w.cfg.Clock.Now().Before(jr.retryAt):
		return true
	}
	entries := make([][]byte, len(jr.buffered))
	for i, b := range jr.buffered {
		entries[i] = b.data
	}
	ids, err := jr.journal.Append(ctx, jr.name, jr.token, entries, jr.cursors)
	for i, id := range ids {
		jr.index.Add(id, jr.buffered[i].rec)
	}
	jr.buffered = append(jr.buffered[:0], jr.buffered[len(ids):]...)
	if err != nil {
		return w.journalFailed("append", err)
	}
	clear(jr.cursors)
	w.journalAnswered()
	if jr.late {
		jr.late = false
		w.settleJournal(ctx)
	}
	w.observeJournal()
	return !jr.lost
}

// journalRetry spaces the tries of a journal Redis does not answer.
var journalRetry = retry.Exponential(100*time.Millisecond, 10*time.Second)

// journalFailed handles a journal write Redis refused: a claim another
// replica holds stops the worker; anything else is tried again after a
// backoff, and told to the log once per outage. That includes a claim
// nobody holds (ErrClaimExpired, after an outage of Redis for every
// replica): the assigner wins it again at its next renewal, or stops the
// branch if another replica did.
func (w *Worker) journalFailed(op string, err error) bool {
	jr := w.jr
	if errors.Is(err, redisstore.ErrNotOwner) && !errors.Is(err, redisstore.ErrClaimExpired) {
		w.loseClaim(err)
		return false
	}
	jr.late = true
	if !jr.failing {
		jr.failing, jr.backoff = true, journalRetry
		w.cfg.Log.Info("cannot journal; committing from memory, and cursors wait until Redis answers", "op", op, "error", err.Error())
	} else {
		w.cfg.Log.V(1).Info("cannot journal yet", "op", op, "error", err.Error())
	}
	jr.retryAt = w.cfg.Clock.Now().Add(jr.backoff.Step())
	return true
}

// journalAnswered ends an outage: Redis took a journal write.
func (w *Worker) journalAnswered() {
	if w.jr.failing {
		w.jr.failing, w.jr.retryAt = false, time.Time{}
		w.cfg.Log.Info("journaling again")
	}
}

// settleJournal trims the entries of windows the core no longer holds,
// with any trim that failed before. Call it after the core took a
// CommittedEvent or a dropping TargetEvent, never after a discarding
// stop: a discarded core's windows go to the next owner.
func (w *Worker) settleJournal(ctx context.Context) {
	jr := w.jr
	if jr == nil || jr.lost {
		return
	}
	held := w.core.HeldWindows()
	// Records not appended yet (Redis failing) whose windows went out need
	// no journal any more; the markers stay, for what was appended before.
	jr.buffered = slices.DeleteFunc(jr.buffered, func(b bufferedRecord) bool {
		return fills(b.rec.Event) && !held[b.rec.Window]
	})
	jr.trim = jr.trim.Merge(jr.index.Settle(held))
	if jr.trim.Empty() || w.cfg.Clock.Now().Before(jr.retryAt) {
		return
	}
	if _, err := jr.journal.Trim(ctx, jr.name, jr.token, jr.trim.UpTo, jr.trim.Delete...); err != nil {
		w.journalFailed("trim", err)
		return
	}
	jr.trim = JournalTrim{}
	w.journalAnswered()
	w.observeJournal()
}

// settles reports whether the core's event ev may have let windows go:
// a commit's result, or a target dropped.
func settles(ev Event) bool {
	switch e := ev.(type) {
	case CommittedEvent:
		return true
	case TargetEvent:
		return e.Remove || e.Suspend
	}
	return false
}

// loseClaim stops every commit and journal write of this worker: another
// replica owns the branch now and restores what this one journaled. Run
// ends after the current message (ErrClaimLost) and the engine is told
// (OutcomeLost), so it can drop the worker and its targets' watches.
func (w *Worker) loseClaim(err error) {
	if w.jr.lost {
		return
	}
	w.jr.lost = true
	w.cfg.Log.Info("the branch's claim is another replica's; committing nothing more and stopping", "error", err.Error())
	w.emit(Outcome{Kind: OutcomeLost, Err: fmt.Errorf("branch %s: %w", w.cfg.Key, ErrClaimLost)})
}

func (w *Worker) claimLost() bool { return w.jr != nil && w.jr.lost }

// cursorMsg asks for cursors to be journaled after every write queued
// before them.
type cursorMsg struct {
	values func(head string) map[string]string
	done   func(error)
}

// JournalCursors stores resume cursors in the journal, in the same append
// as (after) every write queued before this call, so no cursor is stored
// ahead of a write it advances past. values is called on the worker's
// goroutine with the branch head the worker knows ("" when it has read
// none): Git holds that commit, and what the cursors pass beyond it is in
// the journal. done is called, without blocking, with the append's error
// (nil once stored); a worker that stops first never calls it. Without a
// journal it answers ErrNoJournal at once.
func (w *Worker) JournalCursors(ctx context.Context, values func(head string) map[string]string, done func(error)) error {
	if w.jr == nil {
		return ErrNoJournal
	}
	return w.send(ctx, cursorMsg{values: values, done: done})
}

// ErrNoJournal: the worker has no journal to store cursors in.
var ErrNoJournal = errors.New("the branch worker has no journal")

func (w *Worker) journalCursors(ctx context.Context, m cursorMsg) {
	maps.Copy(w.jr.cursors, m.values(w.cursorHead(ctx)))
	if !w.appendJournal(ctx) {
		m.done(ErrClaimLost)
		return
	}
	if len(w.jr.cursors) > 0 {
		// The append failed: the caller keeps them for its next try.
		clear(w.jr.cursors)
		m.done(errors.New("the journal did not take the cursors; see the worker's log"))
		return
	}
	m.done(nil)
}

// cursorHead is the head journaled cursors carry: the worker's, read from
// the forge once when it has read none yet (it started and has not
// planned a window), so a cursor stored before its first commit still
// names the history it belongs to. One naming none makes a new owner
// whose branch exists replay instead of resuming.
func (w *Worker) cursorHead(ctx context.Context) string {
	if !w.state.known && w.state.head == "" && !w.jr.headRead {
		w.jr.headRead = true // a forge that does not answer is not asked every second
		if err := w.state.readHead(ctx); err != nil {
			w.cfg.Log.V(1).Info("cannot read the branch head for the cursors", "error", err.Error())
		}
	}
	return w.settledHead()
}

// observeJournal tells the observer how many entries this worker's
// journal holds and how long the oldest has waited (its ID's stamp).
func (w *Worker) observeJournal() {
	marks := w.jr.index.Marks
	var age time.Duration
	if len(marks) > 0 {
		age = redisstore.EntryAge(w.cfg.Clock.Now(), marks[0].ID)
	}
	w.jr.obs.JournalDepth(w.cfg.Key, int64(len(marks)), age)
}

type nopJournalObserver struct{}

func (nopJournalObserver) JournalDepth(Key, int64, time.Duration) {}
func (nopJournalObserver) JournalGone(Key)                        {}
