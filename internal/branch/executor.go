package branch

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Run is the executor's loop: each message becomes an event for the core,
// and the core's actions are run here, commits under ctx, so a stop
// cancels a conflict replay. On return it has tried once more to commit
// what it holds, so a clean shutdown loses nothing that could be written.
//
// With a journal (Config.Journal) it first reads the branch's journal and
// restores it (readJournal, restoreNow), and it returns ErrClaimLost once
// the journal said another replica owns the branch, committing nothing
// more; a journal without a sealer or token is refused at once
// (Config.CheckJournal).
func (w *Worker) Run(ctx context.Context) error {
	defer close(w.stopped)
	if err := w.cfg.CheckJournal(); err != nil {
		w.cfg.Log.Error(err, "not starting the branch worker")
		return err
	}
	timer := w.cfg.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	w.wake = w.cfg.Clock.Now().Add(time.Hour)
	if w.jr != nil {
		if !w.readJournal(ctx) {
			return nil
		}
		w.restoreBy = w.cfg.Clock.Now().Add(journalRestoreWait)
	}
	for {
		if w.claimLost() {
			w.stopLost()
			return ErrClaimLost
		}
		w.cfg.Observer.QueueDepth(w.cfg.Key, len(w.in))
		w.resetTimer(timer)
		select {
		case <-ctx.Done():
			w.shutdown()
			return nil
		case msg := <-w.in:
			w.handle(ctx, msg)
			if len(w.in) == 0 {
				w.appendLingered(ctx)
			}
		case <-timer.C():
			w.timerFired(ctx)
		}
	}
}

// journalRestoreWait is how long a restored journal waits for the
// settings of the targets it names before it is committed regardless.
const journalRestoreWait = 10 * time.Second

// handle turns a message into the core's event; what only the executor
// owns (the targets' settings, the branch state) it handles itself.
func (w *Worker) handle(ctx context.Context, msg any) {
	if w.restoreDue(msg) {
		w.restoreNow(ctx)
	}
	switch m := msg.(type) {
	case writeMsg:
		w.step(ctx, WriteEvent{Target: m.target, Author: m.author, Write: m.write})
	case syncMsg:
		w.step(ctx, SyncEvent{Target: m.target, Sweep: m.sweep, CloseWindow: m.closeWindow})
	case targetMsg:
		w.updateTarget(ctx, m)
	case settledMsg:
		w.step(ctx, SettleEvent{ID: w.wait(func(o Outcome) { m.fn(o.Head) }), Target: m.target})
	case rereadMsg:
		w.state.forget()
	case attachMsg:
		w.step(ctx, AttachEvent{Request: m.req})
	case flushMsg:
		w.step(ctx, FlushEvent{ID: w.wait(func(o Outcome) { m.done <- o.Err }), Target: m.target})
	case cursorMsg:
		w.journalCursors(ctx, m)
	}
}

// step tells the core ev and runs the actions it returns.
func (w *Worker) step(ctx context.Context, ev Event) { w.act(ctx, nil, []Event{ev}) }

// act runs actions in order, then tells the core each queued event and
// runs what it returns in turn; a commit's result is queued, until the
// core asks for nothing more. With a journal, each event the core took is
// recorded right after its step, every record is appended before a commit
// runs, and a commit's result trims what it settled. Once the claim is
// lost no commit runs; outcomes (a stop's answers to waiters) still do.
func (w *Worker) act(ctx context.Context, actions []Action, queue []Event) {
	for {
		for _, a := range actions {
			switch a := a.(type) {
			case Commit:
				if !w.appendJournal(ctx) {
					continue // the claim is lost: no commit, ever
				}
				queue = append(queue, w.commit(ctx, a))
			case Notify:
				w.notify(a.Outcome)
			case Schedule:
				w.wake = a.At
			}
		}
		if len(queue) == 0 {
			return
		}
		ev := queue[0]
		queue = queue[1:]
		w.setObserved()
		now := w.cfg.Clock.Now()
		actions = w.core.Step(now, ev)
		w.record(ctx, now, ev)
		if settles(ev) {
			w.settleJournal(ctx)
		}
	}
}

// setObserved sets what the core reads of the executor before a step.
func (w *Worker) setObserved() {
	w.core.Silence, w.core.Queued, w.core.ChainLimit = w.commitWindow(), len(w.in), chainLimit(w.cfg.Forge)
}

// timerFired runs what the timer was set for: the journal's linger
// (appendLingered), a restored journal's wait for its targets, the core's
// tick.
func (w *Worker) timerFired(ctx context.Context) {
	now := w.cfg.Clock.Now()
	other := false
	if due, ok := w.journalDue(); ok && !now.Before(due) {
		w.appendJournal(ctx)
		other = true
	}
	if w.jr != nil && len(w.jr.restoring) > 0 && !now.Before(w.restoreBy) {
		w.restoreNow(ctx)
		other = true
	}
	if due, ok := w.pullRecheckDue(); ok && !now.Before(due) {
		w.pullRecheck(ctx)
		other = true
	}
	if !other || !now.Before(w.wake) {
		w.tick(ctx)
	}
}

func (w *Worker) tick(ctx context.Context) {
	w.restoreNow(ctx)
	w.step(ctx, TickEvent{})
}

func (w *Worker) finalize(ctx context.Context) { w.step(ctx, CloseEvent{}) }

// updateTarget keeps the target's settings in the branch state and tells
// the core, which drops what it holds for a removed or suspended target.
func (w *Worker) updateTarget(ctx context.Context, m targetMsg) {
	if !m.remove && !m.suspend {
		w.state.setTarget(m.target)
	}
	// A dropping event trims the journal, which the run context bounds.
	w.step(ctx, TargetEvent{Target: m.target.Key, Remove: m.remove, Suspend: m.suspend})
	if m.remove {
		w.state.removeTarget(m.target.Key)
	}
	w.restoreIfRegistered(ctx)
}

// wait numbers a waiter the core will name in an outcome, and keeps its
// reply for that outcome.
func (w *Worker) wait(reply func(Outcome)) uint64 {
	w.lastWaiter++
	w.waiters[w.lastWaiter] = reply
	return w.lastWaiter
}

// notify sends an outcome of the core on the stream, adding what only the
// executor knows: where a commit is, the branch head settled writes are
// in, and the waiter's reply.
func (w *Worker) notify(o Outcome) {
	switch o.Kind {
	case OutcomeRequest:
		if o.Result.Reason == RequestCommitted {
			o.Result.Branch, o.Result.URL = w.cfg.Key.Branch, w.cfg.Forge.CommitURL(o.Result.Commit)
		}
	case OutcomeFailed:
		w.cfg.Log.Info("commit failed; keeping the writes for a retry",
			"target", o.Target.String(), "retryIn", o.RetryIn.String(), "error", o.Err.Error())
		o.Err = wrapTarget(o.Target, o.Err)
	case OutcomeReplaying:
		// Told to the log only: the window's end comes later, as
		// Committed or Failed, and nothing outside waits on a replay.
		w.cfg.Log.V(1).Info("branch moved; replaying the window on the new head",
			"target", o.Target.String(), "replayIn", o.RetryIn.String(), "error", o.Err.Error())
		return
	case OutcomeSettled, OutcomeFlushed:
		reply, ok := w.waiters[o.Waiter]
		if !ok {
			return
		}
		delete(w.waiters, o.Waiter)
		o.reply = reply
		if o.Kind == OutcomeSettled {
			o.Head = w.settledHead()
		}
	}
	w.emit(o)
}

// emit puts o on the outcome stream. A full stream is waited on, counted,
// rather than dropped: the consumer only updates state in memory and
// coalesces what it hands the reconcilers, so the wait is short.
func (w *Worker) emit(o Outcome) {
	o.Worker = w.cfg.Key
	if w.cfg.Outcomes == nil {
		o.Answer()
		return
	}
	select {
	case w.cfg.Outcomes <- o:
		return
	default:
	}
	w.cfg.Observer.OutcomeWait(w.cfg.Key)
	w.cfg.Outcomes <- o
}

// resetTimer wakes the loop when the core asked to be told the time.
func (w *Worker) resetTimer(timer clock.Timer) {
	if !timer.Stop() {
		select {
		case <-timer.C():
		default:
		}
	}
	wake := w.wake
	if w.jr != nil && len(w.jr.restoring) > 0 && w.restoreBy.Before(wake) {
		wake = w.restoreBy
	}
	if due, ok := w.journalDue(); ok && due.Before(wake) {
		wake = due
	}
	if due, ok := w.pullRecheckDue(); ok && due.Before(wake) {
		wake = due
	}
	timer.Reset(max(wake.Sub(w.cfg.Clock.Now()), 0))
}

// Discard makes the worker, once its context ends, stop without committing
// what it holds. A worker replaced because its settings changed (a signing
// key switched on or rotated, new credentials) must not commit under the
// old ones; its targets replay into the new worker, which restores
// everything it held.
func (w *Worker) Discard() { w.discard.Store(true) }

// shutdown tries once more, briefly and regardless of budget and backoff,
// to commit what the core holds (unless discarded), then ends every
// request and flush still waiting.
func (w *Worker) shutdown() {
	discard := w.discard.Load()
	if discard && w.core.holds() {
		if w.jr != nil {
			w.cfg.Log.Info("replaced: dropping what was not committed; the next worker restores it from the journal")
		} else {
			w.cfg.Log.Info("replaced: dropping what was not committed; the targets' replays restore it")
		}
	}
	// The run context has ended: the last try has its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Journaled first, even within an outage's backoff: whatever the stop
	// does, the next owner finds every write this worker took.
	w.appendBuffered(ctx, true)
	w.step(ctx, StopEvent{Discard: discard})
	w.step(ctx, StoppedEvent{})
	if n := len(w.core.pending); n > 0 {
		w.cfg.Log.Info("stopping with writes not committed; the journal or the next replay restores them", "windows", n)
	}
	if w.jr != nil {
		w.jr.obs.JournalGone(w.cfg.Key)
	}
}

// stopLost ends a worker whose claim another replica took: nothing is
// committed (the stop discards), every waiter is answered, and what it
// journaled stays for the new owner.
func (w *Worker) stopLost() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.act(ctx, nil, []Event{StopEvent{Discard: true}, StoppedEvent{}})
	w.jr.obs.JournalGone(w.cfg.Key)
}
