package branch

import (
	"context"
	"fmt"

	"github.com/configbutler/gitops-reverser/internal/retry"
)

// readJournal reads and decodes the branch's journal before the worker
// takes any event, trying again (RetryBackoff doubling to
// MaxRetryBackoff) while Redis does not answer or an entry cannot be
// read: an entry of a newer release, or sealed under another key, is not
// skipped, since what it holds would be lost. Events wait in the queue
// meanwhile. It reports false when ctx ended first.
func (w *Worker) readJournal(ctx context.Context) bool {
	backoff := retry.Exponential(w.cfg.RetryBackoff, w.cfg.MaxRetryBackoff)
	for {
		items, err := w.decodeJournal(ctx)
		if err == nil {
			w.jr.restoring = items
			if len(items) > 0 {
				w.cfg.Log.Info("restoring the journal of the branch", "entries", len(items))
			}
			return true
		}
		wait := backoff.Step()
		w.cfg.Log.Error(err, "cannot restore the branch's journal; taking no events until it is read", "retryIn", wait.String())
		if !retry.Sleep(ctx, w.cfg.Clock, wait) {
			return false
		}
	}
}

func (w *Worker) decodeJournal(ctx context.Context) ([]JournalItem, error) {
	entries, err := w.jr.journal.Read(ctx, w.jr.name)
	if err != nil {
		return nil, err
	}
	items := make([]JournalItem, len(entries))
	for i, e := range entries {
		rec, err := w.jr.codec.Decode(e.Data)
		if err != nil {
			return nil, fmt.Errorf("journal entry %s: %w", e.ID, err)
		}
		items[i] = JournalItem{ID: e.ID, Record: rec}
	}
	return items, nil
}

// restoreDue reports whether the journal read at start is stepped into
// the core before msg: before anything but a target's settings, so the
// journal's writes come before every new one, and once every target the
// journal names is registered, so its windows commit to known paths.
func (w *Worker) restoreDue(msg any) bool {
	if w.jr == nil || len(w.jr.restoring) == 0 {
		return false
	}
	if m, ok := msg.(targetMsg); ok && !m.remove && !m.suspend {
		return false
	}
	return true
}

// restoreIfRegistered restores once every target the journal names has
// its settings.
func (w *Worker) restoreIfRegistered(ctx context.Context) {
	if w.jr == nil || len(w.jr.restoring) == 0 {
		return
	}
	for _, it := range w.jr.restoring {
		if t, ok := journalTarget(it.Record.Event); ok {
			if _, known := w.state.targets[t]; !known {
				return
			}
		}
	}
	w.restoreNow(ctx)
}

// restoreNow steps the journal read at start into the core and runs the
// actions it asks for, as after any step: every restored window becomes
// the commit it would have been, with its author, on the forge's head.
func (w *Worker) restoreNow(ctx context.Context) {
	if w.jr == nil || len(w.jr.restoring) == 0 {
		return
	}
	items := w.jr.restoring
	w.jr.restoring = nil
	w.setObserved()
	index, actions := RestoreJournal(w.core, items)
	w.jr.index = *index
	// What a restored drop removed (a target removed or suspended before
	// the old owner committed its writes) is trimmed now.
	w.settleJournal(ctx)
	w.observeJournal()
	w.act(ctx, actions, nil)
}

func journalTarget(ev Event) (TargetKey, bool) {
	switch e := ev.(type) {
	case WriteEvent:
		return e.Target, true
	case SyncEvent:
		return e.Target, true
	}
	return TargetKey{}, false
}
