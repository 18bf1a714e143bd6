package branch

import (
	"time"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// window is the open commit window of one (author, GitTarget): writes join
// it until it closes, and one window becomes at most one commit.
type window struct {
	target TargetKey
	author Author
	// writes keeps the last write per object (last write wins); order keeps
	// first-seen order so commit messages list objects as they came.
	writes map[manifest.ObjectID]Write
	order  []manifest.ObjectID
	sweeps []Sweep
	bytes  int
	// reconcile marks a window that carries a replay's state, rendered with
	// the reconcile message template.
	reconcile bool
	lastEvent time.Time
}

func newWindow(target TargetKey, author Author, now time.Time) *window {
	return &window{target: target, author: author, writes: map[manifest.ObjectID]Write{}, lastEvent: now}
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

func (w *window) add(wr Write, now time.Time) {
	key := identity(wr.ID)
	if old, ok := w.writes[key]; ok {
		w.bytes -= len(old.YAML)
		// Keep the first event's receive time: latency is measured from the
		// oldest change the commit carries.
		wr.Received = old.Received
	} else {
		w.order = append(w.order, key)
	}
	w.writes[key] = wr
	w.bytes += len(wr.YAML)
	w.lastEvent = now
}

func (w *window) addSweep(s Sweep, now time.Time) {
	w.sweeps = append(w.sweeps, s)
	w.reconcile = true
	w.lastEvent = now
}

// orderedWrites lists the window's writes in first-seen order.
func (w *window) orderedWrites() []Write {
	out := make([]Write, 0, len(w.order))
	for _, id := range w.order {
		out = append(out, w.writes[id])
	}
	return out
}

func (w *window) empty() bool { return len(w.writes) == 0 && len(w.sweeps) == 0 }
