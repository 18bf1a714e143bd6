package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// CursorStore keeps the streams' resume cursors across restarts (Redis,
// internal/redisstore). Keys and values are the mirror's own strings.
type CursorStore interface {
	// Load returns the value stored under key, "" when there is none.
	Load(ctx context.Context, key string) (string, error)
	// Save stores every value, each refreshed to the store's TTL.
	Save(ctx context.Context, values map[string]string) error
	// Delete forgets keys.
	Delete(ctx context.Context, keys ...string) error
}

// CursorJournal is a Sink whose branch worker journals its writes
// (branch.Worker with Config.Journal): a target's cursors are then stored
// in the worker's journal, after the writes they advance past, instead of
// once those writes are in Git.
type CursorJournal interface {
	Journaled() bool
	JournalCursors(ctx context.Context, values func(head string) map[string]string, done func(error)) error
}

// CursorObserver is told how storing cursors goes, for metrics.
type CursorObserver interface {
	CursorsWritten(n int)
	CursorError(op string, err error)
}

// Cursors are a target's resume cursors: where it keeps them, and the
// fingerprint of the settings they were taken under.
type Cursors struct {
	Store    CursorStore
	Observer CursorObserver
	// Target is the GitTarget's UID: a target deleted and created again
	// starts afresh, and a deleted one's cursors expire.
	Target types.UID
	// Config fingerprints what makes Git's content depend on more than the
	// cluster (path, branch, source, encryption keys, excluded Secrets); a
	// cursor stored under another is not resumed from.
	Config string
	// Resume is whether streams may start from stored cursors. Only a
	// target's first run in a process resumes; one restarted in process
	// (new keys, a new worker) must replay to rewrite Git.
	Resume bool
	// Resync is a user's request for a full resync: the first streams
	// drop their stored cursors and replay, counted as resync_requested,
	// so a crash before the replay is in Git replays again.
	Resync bool
	// Interval is how often handed resourceVersions are stored (once they
	// are settled in Git); DefaultCursorInterval when zero.
	Interval time.Duration
}

// DefaultCursorInterval is how often a target stores its cursors.
const DefaultCursorInterval = time.Second

// cursorSaveTimeout bounds one store call; cursorLoadTimeout a stream's
// read of its cursor at start.
const (
	cursorSaveTimeout = 5 * time.Second
	cursorLoadTimeout = 2 * time.Second
)

// ConfigFingerprint hashes parts into a Cursors.Config.
func ConfigFingerprint(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// cursorKeeper stores a target's cursors off the streams' path: streams
// hand their latest resourceVersion (a map write), and every Interval the
// keeper waits until the branch worker has put everything handed so far
// into Git, then stores it in one batch. A crash therefore resumes from a
// point Git already holds, never past a change still in a window; a
// failing store costs a cold replay after a restart, never an event. When
// the worker journals (CursorJournal), the batch goes into its journal
// instead, after the writes it passes, and a crash resumes from a point
// Git and the journal together hold.
type cursorKeeper struct {
	cfg    Cursors
	target branch.TargetKey
	sink   Sink
	clock  clock.Clock
	log    logr.Logger

	mu     sync.Mutex
	handed map[string]string
	// head is the branch head the cursors last stored were settled on, or
	// one found at start to still hold them; stored with the next cursors
	// when the worker does not know its head (it has read nothing yet).
	head string

	// checkMu serialises the start's history checks, so the streams
	// starting together ask the forge once per stored head.
	checkMu sync.Mutex
	checked map[string]historyCheck
}

func newCursorKeeper(cfg Cursors, target branch.TargetKey, sink Sink, clk clock.Clock, log logr.Logger) *cursorKeeper {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultCursorInterval
	}
	if cfg.Observer == nil {
		cfg.Observer = nopCursorObserver{}
	}
	return &cursorKeeper{cfg: cfg, target: target, sink: sink, clock: clk, log: log, handed: map[string]string{},
		checked: map[string]historyCheck{}}
}

// key names one claim's cursor.
func (k *cursorKeeper) key(c rules.Claim) string {
	return string(k.cfg.Target) + ":" + c.GVR.Group + "/" + c.GVR.Version + "/" + c.GVR.Resource + ":" + c.Namespace
}

// claimFingerprint is the target's fingerprint plus what of the claim
// decides what is written.
func (k *cursorKeeper) claimFingerprint(c rules.Claim) string {
	ops := make([]string, len(c.Operations))
	for i, op := range c.Operations {
		ops[i] = string(op)
	}
	sensitive := "plain"
	if c.Sensitive {
		sensitive = "sensitive"
	}
	return ConfigFingerprint(k.cfg.Config, c.Kind, sensitive, strings.Join(ops, ","))
}

// cursor is the watch.Cursor of claim c; first says whether the stream is
// one of the target's first, which may resume (or are resynced).
func (k *cursorKeeper) cursor(c rules.Claim, first bool) watch.Cursor {
	return &streamCursor{keeper: k, key: k.key(c), config: k.claimFingerprint(c), resume: first && k.cfg.Resume,
		resync: first && k.cfg.Resync}
}

// run stores handed cursors every Interval until ctx ends.
func (k *cursorKeeper) run(ctx context.Context) {
	for {
		timer := k.clock.NewTimer(k.cfg.Interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
			k.flush(ctx)
		}
	}
}

// flush stores what was handed: with the worker's journal when it has
// one, else once it is settled in Git.
func (k *cursorKeeper) flush(ctx context.Context) {
	k.mu.Lock()
	batch := k.handed
	k.handed = map[string]string{}
	k.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if journal, ok := k.sink.(CursorJournal); ok && journal.Journaled() {
		k.journal(ctx, journal, batch)
		return
	}
	settled := make(chan string, 1)
	if err := k.sink.WhenSettled(ctx, k.target, func(head string) { settled <- head }); err != nil {
		k.requeue(batch)
		return
	}
	var head string
	select {
	case head = <-settled:
	case <-ctx.Done():
		return
	}
	saveCtx, cancel := context.WithTimeout(ctx, cursorSaveTimeout)
	defer cancel()
	if err := k.cfg.Store.Save(saveCtx, k.withHead(batch, head)); err != nil {
		k.saveFailed(batch, err)
		return
	}
	k.cfg.Observer.CursorsWritten(len(batch))
}

// journal stores the batch in the worker's journal, in the append after
// every write the streams handed before it. The head each value carries
// is the one the worker knew then: Git holds that commit, and what the
// cursor passes beyond it is in the journal, which a new owner commits
// on top of the branch. A branch that no longer holds it was rewritten
// behind the cursor (checkHistory), as without a journal.
func (k *cursorKeeper) journal(ctx context.Context, journal CursorJournal, batch map[string]string) {
	stored := make(chan error, 1)
	err := journal.JournalCursors(ctx, func(head string) map[string]string { return k.withHead(batch, head) },
		func(err error) { stored <- err })
	if err != nil {
		k.requeue(batch)
		return
	}
	select {
	case err = <-stored:
	case <-ctx.Done():
		return
	}
	if err != nil {
		k.saveFailed(batch, err)
		return
	}
	k.cfg.Observer.CursorsWritten(len(batch))
}

func (k *cursorKeeper) saveFailed(batch map[string]string, err error) {
	k.cfg.Observer.CursorError("save", err)
	k.log.V(1).Info("cannot store the watches' resume cursors; retrying", "error", err.Error())
	k.requeue(batch)
}

// withHead completes each handed value with the branch head it was settled
// on: a cursor holds only for that history.
func (k *cursorKeeper) withHead(batch map[string]string, head string) map[string]string {
	k.mu.Lock()
	if head == "" {
		head = k.head
	}
	k.head = head
	k.mu.Unlock()
	stored := make(map[string]string, len(batch))
	for key, v := range batch {
		stored[key] = v + " " + headToken(head)
	}
	return stored
}

// requeue puts back what a failed flush held, unless a stream handed a
// newer value meanwhile.
func (k *cursorKeeper) requeue(batch map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, v := range batch {
		if _, newer := k.handed[key]; !newer {
			k.handed[key] = v
		}
	}
}

// hand records a stream's latest value; it never blocks on the store.
func (k *cursorKeeper) hand(key, value string) {
	k.mu.Lock()
	k.handed[key] = value
	k.mu.Unlock()
}

// forget drops a claim's cursor: the claim is gone, and a later claim of
// the same scope must replay, not resume across the gap.
func (k *cursorKeeper) forget(c rules.Claim) {
	key := k.key(c)
	k.mu.Lock()
	delete(k.handed, key)
	k.mu.Unlock()
	go k.drop(key)
}

// drop deletes a stored cursor.
func (k *cursorKeeper) drop(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), cursorSaveTimeout)
	defer cancel()
	if err := k.cfg.Store.Delete(ctx, key); err != nil {
		k.cfg.Observer.CursorError("delete", err)
	}
}

// streamCursor is one stream's watch.Cursor. Its stored value is
// "<fingerprint> <resourceVersion> <branch head>" (headToken).
type streamCursor struct {
	keeper         *cursorKeeper
	key, config    string
	resume, resync bool
}

func (c *streamCursor) Load(ctx context.Context) (string, error) {
	if c.resync {
		c.keeper.drop(c.key)
		return "", &watch.NotResumable{Reason: watch.ColdResyncRequested, Why: "a full resync of the GitTarget was requested"}
	}
	if !c.resume {
		return "", nil
	}
	// Redis not answering must not hold the stream back for long: its
	// replay is the fallback.
	loadCtx, cancel := context.WithTimeout(ctx, cursorLoadTimeout)
	value, err := c.keeper.cfg.Store.Load(loadCtx, c.key)
	cancel()
	if err != nil {
		c.keeper.cfg.Observer.CursorError("load", err)
		return "", err
	}
	fields := strings.Fields(value)
	if len(fields) != 3 || fields[0] != c.config {
		if value != "" {
			c.keeper.log.Info("the stored resume cursor was taken under other settings; replaying", "cursor", c.key)
		}
		return "", nil
	}
	return c.keeper.checkHistory(ctx, c.key, fields[1], parseHeadToken(fields[2]))
}

func (c *streamCursor) Advance(rv string) { c.keeper.hand(c.key, c.config+" "+rv) }

type nopCursorObserver struct{}

func (nopCursorObserver) CursorsWritten(int)        {}
func (nopCursorObserver) CursorError(string, error) {}
