package branch

import (
	"slices"
	"time"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// window is the open commit window of one (author, GitTarget): writes join
// it until it closes, and one window becomes at most one commit.
type window struct {
	target TargetKey
	author Author
	// writes keeps the last write per object (last write wins) in
	// first-seen order, so commit messages list objects as they came; at is
	// each object's place in it. A map of ObjectID to Write and a second
	// ObjectID for the order made a 50k-object replay's windows 517 B an
	// object; this, with at by hash, makes them 302 B
	// (BenchmarkReplayWindowsBytesPerObject).
	writes []Write
	at     writeIndex
	sweeps []Sweep
	bytes  int
	// trees counts the writes that carry their rendered tree (Write.Node),
	// which maxWindowTrees bounds. It is not journaled: a restored window's
	// writes carry none.
	trees int
	// reconcile marks a window that carries a replay's state, rendered with
	// the reconcile message template.
	reconcile bool
	// replaying marks a window that holds part of a replay (or of a
	// resumed watch's catch-up) whose target has not finished: it stays
	// open until every stream has replayed or caught up (Sync with
	// closeWindow), so a replay is one commit whatever the commit window.
	// Only replaySilence without events closes it earlier, for a stream
	// that never completes its replay, or a quiet resumed stream whose
	// watch has not yet passed its catch-up list.
	replaying bool
	// request is the CommitRequest that closes the window, if any; message
	// is its commit message, kept for retries after the request has
	// reported a failure. commit is the commit the window became.
	request *Request
	message string
	commit  string
	// refused is how many of the window's objects its last plan would not
	// write.
	refused int
	// opened bounds how long a steady stream of changes keeps the window
	// open; lastEvent starts the silence that closes it.
	opened, lastEvent time.Time
	// seq orders the worker's windows by opening (WhenSettled).
	seq uint64
	// absorbed are the seqs of the windows coalesced into this one: their
	// journal entries are settled when this window is (HeldWindows).
	absorbed []uint64
}

func newWindow(target TargetKey, author Author, now time.Time) *window {
	return &window{target: target, author: author, at: newWriteIndex(0), opened: now, lastEvent: now}
}

// writeKey is what names an object in a window (identity): its version
// and resource do not, and a key without them is two strings smaller.
type writeKey struct{ group, kind, namespace, name string }

func keyOf(id manifest.ObjectID) writeKey {
	return writeKey{group: id.Group, kind: id.Kind, namespace: id.Namespace, name: id.Name}
}

// write is the window's write of the object id names, if any.
func (w *window) write(id manifest.ObjectID) (Write, bool) {
	i, ok := w.at.find(w.writes, keyOf(id))
	if !ok {
		return Write{}, false
	}
	return w.writes[i], true
}

// toolsOf names the tools of the window's write of id (Write.ChangedWith).
func (w *window) toolsOf(id manifest.ObjectID) []string {
	wr, _ := w.write(id)
	return wr.ChangedWith
}

// maxWindowAge is the decision how long a window may stay open while
// changes keep arriving inside its silence: four silences (20 s with the
// default window), at most ten minutes, never less than one silence.
// Without it a steady stream would never be committed.
func maxWindowAge(silence time.Duration) time.Duration {
	return max(silence, min(4*silence, 10*time.Minute))
}

// replaySilence is the shortest silence that closes a window holding an
// unfinished replay: the default commit window. A replay's events come
// close together, but not within a 1 ms window when twenty streams replay
// at once; a stream that cannot complete its replay (forbidden, a type no
// longer served) must not hold its siblings' objects back for longer.
const replaySilence = 5 * time.Second

// heldSilence is the decision how long a silence closes the window: the
// commit window, and at least replaySilence while a replay is in progress.
func heldSilence(silence time.Duration, replaying bool) time.Duration {
	if replaying {
		return max(silence, replaySilence)
	}
	return silence
}

// closesAt is when the window closes unless another change arrives first.
func (w *window) closesAt(silence time.Duration) time.Time {
	silence = heldSilence(silence, w.replaying)
	bySilence := w.lastEvent.Add(silence)
	if byAge := w.opened.Add(maxWindowAge(silence)); byAge.Before(bySilence) {
		return byAge
	}
	return bySilence
}

// absorbs reports whether later, a closed window waiting behind w, can be
// committed as part of w: same author and target, and no sweep, which is
// planned before writes and so must not move ahead of w's writes.
func (w *window) absorbs(later *window, maxBytes int) bool {
	return w.accepts(later.target, later.author) && len(later.sweeps) == 0 && w.bytes+later.bytes <= maxBytes &&
		!w.requested() && !later.requested()
}

// requested reports whether a CommitRequest closed the window: its commit
// is what the request asked for, so it is never merged with another.
func (w *window) requested() bool { return w.request != nil || w.message != "" }

// bind makes r the request that closes w.
func (w *window) bind(r *Request) {
	w.request, w.message = r, r.Message
}

// absorb adds later's writes to w, last write winning.
func (w *window) absorb(later *window) {
	for _, wr := range later.writes {
		w.add(wr, later.lastEvent)
	}
	w.reconcile = w.reconcile || later.reconcile
	w.replaying = w.replaying || later.replaying
	w.absorbed = append(append(w.absorbed, later.seq), later.absorbed...)
}

func (w *window) accepts(target TargetKey, author Author) bool {
	return w.target == target && w.author == author
}

// identity drops what does not name an object (version, resource), so one
// object seen under two versions is one write.
func identity(id manifest.ObjectID) manifest.ObjectID {
	id.Version, id.Resource = "", ""
	return id
}

// maxWindowTrees bounds the rendered trees one window holds. A tree saves
// the planner a parse but weighs about six times its YAML (3.1 KiB for a
// 500-byte ConfigMap), and a burst of live changes waits in its window
// until it is committed: past this many, a write is kept without its tree
// (about 6 MiB of trees a window at that size) and is parsed once instead.
const maxWindowTrees = 2048

func (w *window) add(wr Write, now time.Time) {
	i, replaced := w.at.find(w.writes, keyOf(wr.ID))
	var old Write
	if replaced {
		old = w.writes[i]
	}
	if replaced && old.Node != nil {
		w.trees--
	}
	if wr.Node != nil && w.trees >= maxWindowTrees {
		wr.Node = nil
	} else if wr.Node != nil {
		w.trees++
	}
	if replaced {
		w.bytes -= len(old.YAML)
		// Keep the first event's receive time: latency is measured from the
		// oldest change the commit carries.
		wr.Received = old.Received
		wr.ChangedWith = mergedTools(old, wr)
		w.writes[i] = wr
	} else {
		w.writes = append(w.writes, wr)
		w.at.set(w.writes, len(w.writes)-1)
	}
	w.bytes += len(wr.YAML)
	w.lastEvent = now
	w.replaying = w.replaying || wr.Replay || wr.CatchUp
}

// mergedTools are the tools of an object's writes that one window
// merges: each upsert's tools count, since the commit carries all their
// changes; a delete starts afresh, since what the tools wrote before it is
// gone, and nobody is named for the removal.
func mergedTools(old, latest Write) []string {
	if old.YAML == nil || latest.YAML == nil {
		return latest.ChangedWith
	}
	tools := slices.Clone(old.ChangedWith)
	for _, t := range latest.ChangedWith {
		if !slices.Contains(tools, t) {
			tools = append(tools, t)
		}
	}
	return tools
}

// addSweep adds a replay's sweep; replaying says the target's replay goes
// on in other streams. A write already in the window for an
// object the sweep covers but the replay did not find is older than the
// replay (the object was deleted while the stream was down): it is dropped,
// since the window plans sweeps before writes and the stale write would
// otherwise keep the deleted object in Git.
func (w *window) addSweep(s Sweep, replaying bool, now time.Time) {
	// By name: the sweep's objects are all of its scope (Sweep.Found).
	present := make(map[string]struct{}, len(s.Names)+len(s.Present))
	for name := range s.Found() {
		present[name] = struct{}{}
	}
	kept := w.writes[:0]
	for _, wr := range w.writes {
		if _, found := present[wr.ID.Name]; s.Scope.Covers(wr.ID) && !found {
			w.bytes -= len(wr.YAML)
			if wr.Node != nil {
				w.trees--
			}
			continue
		}
		kept = append(kept, wr)
	}
	clear(w.writes[len(kept):]) // what was dropped holds no YAML or tree any longer
	if len(kept) < len(w.writes) {
		w.at = newWriteIndex(len(kept))
		for i := range kept {
			w.at.set(kept, i)
		}
	}
	w.writes = kept
	w.sweeps = append(w.sweeps, s)
	w.reconcile = true
	w.replaying = w.replaying || replaying
	w.lastEvent = now
}

// coveredUpserts are the names of the objects the window writes (not
// deletes) that scope covers, as a sweep names what it found.
func (w *window) coveredUpserts(scope manifest.SweepScope) []string {
	var out []string
	for _, wr := range w.writes {
		if wr.YAML != nil && scope.Covers(wr.ID) {
			out = append(out, wr.ID.Name)
		}
	}
	return out
}

// orderedWrites lists the window's writes in first-seen order.
func (w *window) orderedWrites() []Write { return slices.Clone(w.writes) }

// carried names the window's objects in first-seen order, by identity
// (OutcomePlanned's Carried).
func (w *window) carried() []manifest.ObjectID {
	out := make([]manifest.ObjectID, 0, len(w.writes))
	for _, wr := range w.writes {
		out = append(out, identity(wr.ID))
	}
	return out
}

func (w *window) empty() bool { return len(w.writes) == 0 && len(w.sweeps) == 0 }
