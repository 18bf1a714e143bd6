package branch

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The journal is what makes a branch's accepted writes survive a crash or
// a handover (issue 24): the core's journaled events, appended to a durable
// log (redisstore.Journal, a Redis stream per branch) before the watch
// cursors they advance are stored, and removed once the windows they went
// into are committed. A new owner steps them into a fresh core
// (RestoreJournal) and commits on top of the forge head, so every window
// that was accepted becomes the same commit, with the same author, as it
// would have without the crash.
//
// What is journaled (Journaled) is what changes what the branch holds and
// cannot be learnt again from the cluster:
//
//   - WriteEvent: an accepted write. A crash after its cursor was stored
//     would otherwise lose it (the watch resumes past it), or collapse its
//     intermediate versions into a replay's current state.
//   - SyncEvent with a Sweep: a replay's deletes, planned with its window.
//     With CloseWindow only: the end of a target's replay, which closes its
//     window; kept so a restored replay window closes where it did.
//   - TargetEvent with Remove or Suspend: it drops the target's writes; kept
//     so a restore drops them again instead of committing them.
//
// Not journaled:
//
//   - TickEvent, CloseEvent, FlushEvent, StopEvent: they close windows by
//     time or on demand. Each record carries the window its write went into
//     (JournalRecord.Window), so a restore closes a window wherever the
//     next record names another, whatever closed it.
//   - AttachEvent: a CommitRequest lives in the cluster; its controller
//     attaches it again to the new owner. A restored window it had closed
//     is committed with the default message unless it is attached again.
//   - SettleEvent, FlushEvent: waiters are callbacks of one process.
//   - CommittedEvent: a commit is recorded by removing its windows' entries
//     (JournalIndex.Settle, redisstore.Journal.Trim), not by an entry.
//   - FailedEvent, ConflictEvent, ChainRefusedEvent: retry and backoff
//     state of one owner; a new owner starts afresh on the forge head.
//   - TargetEvent setting a target: the target's settings are the
//     cluster's, and the core keeps nothing of them.

// JournalVersion is the version of the entries EncodeJournal writes.
// DecodeJournal refuses a newer one: an owner of an older release meeting
// a newer journal fails loudly instead of dropping what it cannot read.
// Version 2 names a sweep's objects by name (Sweep.Names), which a
// version 1 reader would not see, and so would delete them; version 1
// entries, by whole identity (Sweep.Present), are still read.
const JournalVersion = 2

// oldestJournalVersion is the oldest version DecodeJournal reads.
const oldestJournalVersion = 1

// JournalRecord is one journaled event: when the core took it (the time it
// was stepped at, so a restored window opens and closes as the original
// did) and the seq of the window its write or sweep went into
// (Core.LastWindow right after the step; unused for a TargetEvent or a
// SyncEvent that only closes).
type JournalRecord struct {
	At     time.Time
	Window uint64
	Event  Event
}

// ErrSensitiveUnsealed refuses to journal a sensitive object's plaintext
// when no JournalSealer is configured: a Secret's content must not reach
// Redis in clear.
var ErrSensitiveUnsealed = errors.New("a sensitive write is not journaled without a sealer")

// JournalSealer encrypts a sensitive write's YAML for the journal and
// decrypts it on restore (NewAEADSealer).
type JournalSealer interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// JournalCodec encodes and decodes journal entries. The zero value
// journals no sensitive write (ErrSensitiveUnsealed).
type JournalCodec struct {
	Sealer JournalSealer
}

// journalJSON is an entry as stored: a version and exactly one event.
type journalJSON struct {
	V      int          `json:"v"`
	At     time.Time    `json:"at"`
	Window uint64       `json:"window,omitempty"`
	Write  *WriteEvent  `json:"write,omitempty"`
	Sync   *SyncEvent   `json:"sync,omitempty"`
	Drop   *TargetEvent `json:"drop,omitempty"`
	// Sealed says Write.Write.YAML is the sealer's ciphertext.
	Sealed bool `json:"sealed,omitempty"`
}

// Journaled is the decision whether the core's event ev is journaled (see
// the list above).
func Journaled(ev Event) bool {
	switch e := ev.(type) {
	case WriteEvent:
		return true
	case SyncEvent:
		return e.Sweep != nil || e.CloseWindow
	case TargetEvent:
		return e.Remove || e.Suspend
	}
	return false
}

// fills reports whether ev puts something into a window: its record then
// belongs to the window it names (JournalIndex).
func fills(ev Event) bool {
	switch e := ev.(type) {
	case WriteEvent:
		return true
	case SyncEvent:
		return e.Sweep != nil
	}
	return false
}

// EncodeJournal is JournalCodec{}.Encode.
func EncodeJournal(rec JournalRecord) ([]byte, bool, error) { return JournalCodec{}.Encode(rec) }

// DecodeJournal is JournalCodec{}.Decode.
func DecodeJournal(data []byte) (JournalRecord, error) { return JournalCodec{}.Decode(data) }

// Encode returns rec's entry, or false when its event is not journaled.
// A write's rendered tree (Write.Node) is a cache and is not kept.
func (c JournalCodec) Encode(rec JournalRecord) ([]byte, bool, error) {
	if !Journaled(rec.Event) {
		return nil, false, nil
	}
	j := journalJSON{V: JournalVersion, At: rec.At, Window: rec.Window}
	switch e := rec.Event.(type) {
	case WriteEvent:
		if e.Write.Sensitive && e.Write.YAML != nil {
			if c.Sealer == nil {
				return nil, false, fmt.Errorf("journaling %s: %w", e.Write.ID, ErrSensitiveUnsealed)
			}
			sealed, err := c.Sealer.Seal(e.Write.YAML)
			if err != nil {
				return nil, false, fmt.Errorf("sealing %s for the journal: %w", e.Write.ID, err)
			}
			e.Write.YAML, j.Sealed = sealed, true
		}
		j.Write = &e
	case SyncEvent:
		j.Sync = &e
	case TargetEvent:
		j.Drop = &e
	}
	data, err := json.Marshal(j)
	if err != nil {
		return nil, false, fmt.Errorf("encoding a journal entry: %w", err)
	}
	return data, true, nil
}

// Decode reads an entry Encode wrote. The write it holds has no rendered
// tree: the planner parses its YAML once (manifest.Upsert.Node).
func (c JournalCodec) Decode(data []byte) (JournalRecord, error) {
	var j journalJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return JournalRecord{}, fmt.Errorf("decoding a journal entry: %w", err)
	}
	if j.V < oldestJournalVersion || j.V > JournalVersion {
		return JournalRecord{}, fmt.Errorf("a journal entry of version %d; this release reads up to version %d", j.V, JournalVersion)
	}
	rec := JournalRecord{At: j.At, Window: j.Window}
	switch {
	case j.Write != nil:
		if j.Sealed {
			if c.Sealer == nil {
				return JournalRecord{}, fmt.Errorf("opening %s: %w", j.Write.Write.ID, ErrSensitiveUnsealed)
			}
			plain, err := c.Sealer.Open(j.Write.Write.YAML)
			if err != nil {
				return JournalRecord{}, fmt.Errorf("opening %s from the journal: %w", j.Write.Write.ID, err)
			}
			j.Write.Write.YAML = plain
		}
		rec.Event = *j.Write
	case j.Sync != nil:
		rec.Event = *j.Sync
	case j.Drop != nil:
		rec.Event = *j.Drop
	default:
		return JournalRecord{}, errors.New("a journal entry holds no event")
	}
	return rec, nil
}

// LastWindow is the seq of the window a WriteEvent or a sweep just
// stepped went into (open, or closed by a full buffer or an end of
// replay, even when the full one's close opened the next). The executor
// puts it in the event's JournalRecord.
func (c *Core) LastWindow() uint64 { return c.lastInto }

// HeldWindows are the seqs of the windows whose writes the core still
// holds: open, pending or in flight, and those coalesced into them. A
// journal entry of any other window is settled (JournalIndex.Settle).
func (c *Core) HeldWindows() map[uint64]bool {
	held := map[uint64]bool{}
	for _, win := range c.held() {
		held[win.seq] = true
		for _, seq := range win.absorbed {
			held[seq] = true
		}
	}
	return held
}

// JournalItem is a decoded journal entry and its ID in the journal.
type JournalItem struct {
	ID     string
	Record JournalRecord
}

// RestoreJournal steps a journal, oldest first, into c (a new owner's
// fresh core, configured as the old one was) and returns the index of the
// restored entries and the actions the steps asked for, which the
// executor runs as after any step (the first Commit among them carries
// the restored windows).
//
// Each record goes into a window of the seq it names: a record naming
// another window than the open one closes it first, so windows closed by
// time, a flush or a request close where they did. While records remain,
// Queued is set to their count, so a forge that chains commits gets the
// restored windows as one chain. Set c.Silence and c.ChainLimit first, as
// before any step. The records' times are in the past, so the first
// Schedule asks for a tick at once: windows past their silence close and
// go out then.
func RestoreJournal(c *Core, items []JournalItem) (*JournalIndex, []Action) {
	index := &JournalIndex{}
	var actions []Action
	for i, it := range items {
		rec := it.Record
		c.Queued = len(items) - i - 1
		if fills(rec.Event) {
			if c.window != nil && c.window.seq != rec.Window {
				actions = append(actions, c.Step(rec.At, CloseEvent{})...)
			}
			if c.window == nil && rec.Window > c.windowSeq {
				// Seqs keep growing across owners, so the next owner's
				// restore tells this owner's windows apart too.
				c.windowSeq = rec.Window
			}
		}
		actions = append(actions, c.Step(rec.At, rec.Event)...)
		index.Add(it.ID, JournalRecord{At: rec.At, Window: c.LastWindow(), Event: rec.Event})
	}
	c.Queued = 0
	return index, actions
}

// JournalIndex is the executor's account of which window each journal
// entry of its branch went into, as plain data: it says which entries a
// commit settled. Entries are added in journal order (Add, after the
// append that stored them returned their IDs); Settle, after the core
// took a CommittedEvent or dropped a target, says what to trim; a trim
// that failed is kept and merged into the next (JournalTrim.Merge).
type JournalIndex struct {
	Marks []JournalMark
}

// JournalMark is one entry: its ID, the window its write went into, and
// whether it is a marker (a drop or an end of replay), which belongs to
// no window (Window 0) and matters only while an entry before it waits.
type JournalMark struct {
	ID     string
	Window uint64
	Marker bool
}

// JournalTrim is what Settle found settled: every entry up to and
// including UpTo ("" for none), and the entries Delete further on (of
// windows committed while an older one still waits). It is the argument
// list of redisstore.Journal.Trim.
type JournalTrim struct {
	UpTo   string
	Delete []string
}

// Empty reports whether there is nothing to trim.
func (t JournalTrim) Empty() bool { return t.UpTo == "" && len(t.Delete) == 0 }

// Merge is t followed by later, for a trim that failed (Redis did not
// answer) and is tried again with the next: Settle has already forgotten
// its entries. A later UpTo is never before an earlier one, and removing
// an entry twice removes nothing the second time.
func (t JournalTrim) Merge(later JournalTrim) JournalTrim {
	out := JournalTrim{UpTo: t.UpTo, Delete: append(slices.Clip(t.Delete), later.Delete...)}
	if later.UpTo != "" {
		out.UpTo = later.UpTo
	}
	return out
}

// Add records the entry id of rec.
func (x *JournalIndex) Add(id string, rec JournalRecord) {
	if !fills(rec.Event) {
		x.Marks = append(x.Marks, JournalMark{ID: id, Marker: true})
		return
	}
	x.Marks = append(x.Marks, JournalMark{ID: id, Window: rec.Window})
}

// Settle returns the entries whose windows the core no longer holds
// (held is Core.HeldWindows) and forgets them. An entry is settled once
// its window left the core: committed, found to be in Git already, or
// dropped with its target. Call it after a CommittedEvent or a dropping
// TargetEvent, never after a discarding StopEvent: a discarded core's
// windows are not committed, and its successor restores them from the
// journal.
func (x *JournalIndex) Settle(held map[uint64]bool) JournalTrim {
	var trim JournalTrim
	prefix := true
	kept := x.Marks[:0]
	for _, m := range x.Marks {
		settled := !m.Marker && !held[m.Window]
		switch {
		case prefix && (settled || m.Marker):
			trim.UpTo = m.ID
			continue
		case settled:
			trim.Delete = append(trim.Delete, m.ID)
			continue
		}
		prefix = false
		kept = append(kept, m)
	}
	clear(x.Marks[len(kept):])
	x.Marks = kept
	return trim
}

// JournalObserver is told, for metrics, how much of a branch's journal
// waits for its commit (metrics.JournalMetrics): how many entries, and how
// long the oldest has waited (redisstore.Journal.Stats). JournalGone: the
// branch was handed over or removed; this replica reports it no more.
type JournalObserver interface {
	JournalDepth(worker Key, entries int64, oldest time.Duration)
	JournalGone(worker Key)
}
