package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// WorkerSettings is what a branch worker is built from, with a fingerprint
// of the GitProvider generation and credentials it came from: a different
// fingerprint replaces the worker.
type WorkerSettings struct {
	// Config is nil when the caller found the worker built from
	// Fingerprint running (WorkerFingerprint) and built nothing: reading the
	// credentials again and opening a forge client on every reconcile
	// would be thrown away.
	Config      *branch.Config
	Fingerprint string
}

// ErrWorkerReplaced is ApplyTarget's answer to settings without a Config
// when the worker built from their fingerprint no longer runs (another
// target's settings replaced it, or it was released since the caller
// asked): the caller builds the settings and applies again.
var ErrWorkerReplaced = errors.New("the branch worker changed since it was looked up")

// WorkerFingerprint is the fingerprint of the settings the running worker
// of key was built from; false when none runs.
func (e *Engine) WorkerFingerprint(key branch.Key) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if existing := e.workers[key]; existing != nil {
		return existing.fingerprint, true
	}
	return "", false
}

type workerEntry struct {
	worker      *branch.Worker
	fingerprint string
	cancel      context.CancelFunc
	done        chan struct{}
}

func (w *workerEntry) stop() {
	w.cancel()
	<-w.done
}

// ensureWorker returns the running worker for key, starting or replacing it
// when the settings changed. Callers hold no lock.
func (e *Engine) ensureWorker(runCtx context.Context, key branch.Key, s WorkerSettings) (*branch.Worker, bool, error) {
	e.mu.Lock()
	existing := e.workers[key]
	if existing != nil && existing.fingerprint == s.Fingerprint {
		e.mu.Unlock()
		return existing.worker, false, nil
	}
	if s.Config == nil {
		e.mu.Unlock()
		return nil, false, ErrWorkerReplaced
	}
	delete(e.workers, key)
	e.mu.Unlock()
	if existing != nil {
		// The old settings may no longer be the ones to commit with (a
		// signing key switched on, rotated credentials): what the old worker
		// holds is dropped, and the targets' replays into the new worker
		// restore it.
		existing.worker.Discard()
		existing.stop()
	}
	cfg := *s.Config
	cfg.Key = key
	cfg.Log = e.opts.Log // the worker adds its own "worker" key
	cfg.BufferMax = e.opts.BufferMax
	if e.opts.Metrics != nil {
		cfg.Observer = e.opts.Metrics
	}
	cfg.Outcomes = e.outcomes
	if e.opts.Journal != nil && e.opts.Ownership != nil {
		cfg.Journal, cfg.ClaimToken = e.opts.Journal, e.opts.Ownership.Token()
		cfg.JournalSealer, cfg.JournalObserver = e.opts.JournalSealer, e.opts.JournalObserver
		if err := cfg.CheckJournal(); err != nil {
			return nil, false, fmt.Errorf("the branch journal of %s: %w", key, err)
		}
	}
	w := branch.New(cfg)
	ctx, cancel := context.WithCancel(runCtx)
	entry := &workerEntry{worker: w, fingerprint: s.Fingerprint, cancel: cancel, done: make(chan struct{})}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		// The outcome stream closes once the running workers stopped: a
		// worker started now would have nowhere to send.
		cancel()
		return nil, false, ErrNotStarted
	}
	e.workerRuns.Add(1)
	go func() {
		defer e.workerRuns.Done()
		defer close(entry.done)
		_ = w.Run(ctx)
	}()
	e.workers[key] = entry
	return w, true, nil
}

// releaseWorker stops a worker no target uses any more.
func (e *Engine) releaseWorker(key branch.Key) {
	e.mu.Lock()
	for _, t := range e.targets {
		if t.spec.Worker == key {
			e.mu.Unlock()
			return
		}
	}
	entry := e.workers[key]
	delete(e.workers, key)
	e.mu.Unlock()
	if entry != nil {
		entry.stop()
	}
}

func (e *Engine) committed(info branch.CommitInfo) {
	e.mu.Lock()
	if t := e.targets[info.Target]; t != nil {
		c := info
		t.lastCommit = &c
		t.lastError = nil
	}
	e.mu.Unlock()
	e.notify(info.Target)
}

// planned records the objects the planner would not write safely, and
// forgets earlier refusals of the objects it now plans; the rest of the
// commit goes ahead, so a refusal is not a commit failure.
func (e *Engine) planned(target branch.TargetKey, carried []manifest.ObjectID, refusals []manifest.Refusal) {
	again := make(map[refusalKey]bool, len(refusals))
	for _, r := range refusals {
		again[keyOfObject(r.ID)] = true
	}
	// An object refused again keeps its entry, so it is not announced anew.
	lifted := slices.DeleteFunc(slices.Clone(carried), func(id manifest.ObjectID) bool { return again[keyOfObject(id)] })
	e.updateRefusals(target, func(s refusalSet) bool {
		changed := s.planned(lifted)
		for _, r := range refusals {
			changed = s.refuse(Refusal{Object: r.ID, Reason: string(r.Reason), Detail: r.Detail}, true) || changed
		}
		return changed
	})
}

func (e *Engine) failed(target branch.TargetKey, err error) {
	e.mu.Lock()
	if t := e.targets[target]; t != nil {
		t.lastError = err
	}
	e.mu.Unlock()
	e.notify(target)
}

// settled forgets a target's last failure once one of its windows went
// through, with or without a commit: a retry that finds its writes already
// in Git (the content that failed it since removed) makes no commit, and
// the status must not keep naming the failure until some later one.
func (e *Engine) settled(target branch.TargetKey) {
	e.mu.Lock()
	t := e.targets[target]
	cleared := t != nil && t.lastError != nil
	if cleared {
		t.lastError = nil
	}
	e.mu.Unlock()
	if cleared {
		e.notify(target)
	}
}
