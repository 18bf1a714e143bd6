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
func (w *Worker) Run(ctx context.Context) error {
	defer close(w.stopped)
	timer := w.cfg.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	w.wake = w.cfg.Clock.Now().Add(time.Hour)
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

// handle turns a message into the core's event; what only the executor
// owns (the targets' settings, the branch state) it handles itself.
func (w *Worker) handle(ctx context.Context, msg any) {
	switch m := msg.(type) {
	case writeMsg:
		w.step(ctx, WriteEvent{Target: m.target, Author: m.author, Write: m.write})
	case syncMsg:
		w.step(ctx, SyncEvent{Target: m.target, Sweep: m.sweep, CloseWindow: m.closeWindow})
	case targetMsg:
		w.updateTarget(m)
	case settledMsg:
		w.step(ctx, SettleEvent{ID: w.wait(func(o Outcome) { m.fn(o.Head) }), Target: m.target})
	case rereadMsg:
		w.state.forget()
	case attachMsg:
		w.step(ctx, AttachEvent{Request: m.req})
	case flushMsg:
		w.step(ctx, FlushEvent{ID: w.wait(func(o Outcome) { m.done <- o.Err }), Target: m.target})
	}
}

// step tells the core ev and runs the actions it returns, in order; a
// commit's result is told to the core in turn, until it asks for nothing
// more.
func (w *Worker) step(ctx context.Context, ev Event) {
	for queue := []Event{ev}; len(queue) > 0; queue = queue[1:] {
		w.core.Silence, w.core.Queued, w.core.ChainLimit = w.commitWindow(), len(w.in), chainLimit(w.cfg.Forge)
		for _, a := range w.core.Step(w.cfg.Clock.Now(), queue[0]) {
			switch a := a.(type) {
			case Commit:
				queue = append(queue, w.commit(ctx, a))
			case Notify:
				w.notify(a.Outcome)
			case Schedule:
				w.wake = a.At
			}
		}
	}
}

func (w *Worker) tick(ctx context.Context) { w.step(ctx, TickEvent{}) }

func (w *Worker) finalize(ctx context.Context) { w.step(ctx, CloseEvent{}) }

// updateTarget keeps the target's settings in the branch state and tells
// the core, which drops what it holds for a removed or suspended target.
func (w *Worker) updateTarget(m targetMsg) {
	if !m.remove && !m.suspend {
		w.state.setTarget(m.target)
	}
	// A target event never asks for a commit, so there is no commit for a
	// context to bound.
	w.step(context.Background(), TargetEvent{Target: m.target.Key, Remove: m.remove, Suspend: m.suspend})
	if m.remove {
		w.state.removeTarget(m.target.Key)
	}
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
	timer.Reset(max(w.wake.Sub(w.cfg.Clock.Now()), 0))
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
		w.cfg.Log.Info("replaced: dropping what was not committed; the targets' replays restore it")
	}
	// The run context has ended: the last try has its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w.step(ctx, StopEvent{Discard: discard})
	w.step(ctx, StoppedEvent{})
	if n := len(w.core.pending); n > 0 {
		w.cfg.Log.Info("stopping with writes not committed; the next replay restores them", "windows", n)
	}
}
