package engine

import (
	"context"
	"errors"
	"reflect"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/rules"
)

// Ownership says which branches this replica runs when several replicas
// share the work (ha.Assigner); nil in Options is one replica that runs
// every branch.
type Ownership interface {
	// Owns reports whether this replica owns the branch now.
	Owns(key branch.Key) bool
	// Assigned reports whether the assignment gives key to this replica
	// now, claimed or not: who answers for something no branch runs (a
	// CommitRequest naming a GitTarget that does not exist).
	Assigned(key branch.Key) bool
	// Token is this replica's claim token: every journal write of a
	// branch it owns is fenced by it.
	Token() string
	// Kick asks for the assignment to be decided again: the branches the
	// GitTargets use changed. It must not block.
	Kick()
}

// ErrNotOwner is ApplyTarget's answer for a GitTarget whose branch another
// replica owns: this one neither runs it nor writes its status.
var ErrNotOwner = errors.New("another replica owns the GitTarget's branch")

// NoteTarget records the branch a GitTarget writes, owned here or not: the
// assignment spreads the branches of every GitTarget. A change of branch,
// or a target not known before, asks for a new assignment.
func (e *Engine) NoteTarget(t branch.TargetKey, key branch.Key) {
	e.mu.Lock()
	old, known := e.branchOf[t]
	e.branchOf[t] = key
	e.mu.Unlock()
	if (!known || old != key) && e.opts.Ownership != nil {
		e.opts.Ownership.Kick()
	}
}

// ForgetTarget drops a deleted GitTarget from the assignment and from the
// claims noted for it.
func (e *Engine) ForgetTarget(t branch.TargetKey) {
	e.mu.Lock()
	_, known := e.branchOf[t]
	delete(e.branchOf, t)
	_, noted := e.elsewhere[t]
	delete(e.elsewhere, t)
	e.mu.Unlock()
	if known && e.opts.Ownership != nil {
		e.opts.Ownership.Kick()
	}
	if noted {
		e.claimsChanged()
	}
}

// NoteClaims records the claims of GitTarget t, which reads the
// operator's own cluster and another replica runs; nil claims forget them.
// The admission observer's registration is written by one elected replica
// for every replica's targets (LocalClaims), and what a target claims
// follows from the cluster's rules, not from who runs it.
func (e *Engine) NoteClaims(t branch.TargetKey, claims []rules.Claim) {
	e.mu.Lock()
	old, noted := e.elsewhere[t]
	if claims == nil {
		delete(e.elsewhere, t)
	} else {
		e.elsewhere[t] = claims
	}
	e.mu.Unlock()
	if noted != (claims != nil) || !reflect.DeepEqual(old, claims) {
		e.claimsChanged()
	}
}

// Owns reports whether this replica runs key's work: always without
// Ownership, and never while the branch is being released.
func (e *Engine) Owns(key branch.Key) bool {
	if e.opts.Ownership == nil {
		return true
	}
	e.mu.Lock()
	releasing := e.releasing[key]
	e.mu.Unlock()
	return !releasing && e.opts.Ownership.Owns(key)
}

// Assigned reports whether this replica answers for key without running
// it (Ownership.Assigned): always without Ownership.
func (e *Engine) Assigned(key branch.Key) bool {
	return e.opts.Ownership == nil || e.opts.Ownership.Assigned(key)
}

// Branches are the branches of every GitTarget noted (ha.Host).
func (e *Engine) Branches() []branch.Key {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[branch.Key]bool{}
	var out []branch.Key
	for _, key := range e.branchOf {
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	return out
}

// Take runs a branch just claimed (ha.Host): its GitTargets are reconciled
// at once, which starts the worker and their watches.
func (e *Engine) Take(key branch.Key) {
	e.mu.Lock()
	delete(e.releasing, key)
	var targets []branch.TargetKey
	for t, k := range e.branchOf {
		if k == key {
			targets = append(targets, t)
		}
	}
	e.mu.Unlock()
	for _, t := range targets {
		e.notify(t)
	}
}

// Release stops a branch's work and returns once its worker has stopped
// (ha.Host). Graceful: the worker commits what it holds first, so the next
// owner starts from Git as this one leaves it. Otherwise the claim is lost
// and nothing more is committed: the journal keeps the writes for the next
// owner. No reconcile can start the branch again meanwhile (Owns is false
// from the first moment).
func (e *Engine) Release(_ context.Context, key branch.Key, graceful bool) {
	e.mu.Lock()
	e.releasing[key] = true
	e.mu.Unlock()
	// The applies that saw the branch owned finish first; later ones see
	// it releasing.
	e.handover.Lock()
	defer e.handover.Unlock()
	e.mu.Lock()
	var stopped []*targetEntry
	for t, entry := range e.targets {
		if entry.spec.Worker == key {
			stopped = append(stopped, entry)
			delete(e.targets, t)
			if _, known := e.branchOf[t]; known && entry.source != nil && entry.source.Local {
				// The next owner runs it: its claims still hold. A target
				// forgotten (deleted) meanwhile claims nothing any more.
				e.elsewhere[t] = entry.spec.Claims
			}
		}
	}
	worker := e.workers[key]
	delete(e.workers, key)
	stopping := e.stopping
	e.mu.Unlock()
	if stopping {
		// The engine's own stop (the same shutdown) stops every worker and
		// lets it commit what it holds: the claim is released only after.
		defer e.workerRuns.Wait()
	}
	for _, entry := range stopped {
		entry.mirror.Stop()
	}
	if worker != nil {
		if !graceful {
			worker.worker.Discard()
		}
		worker.stop()
	}
	for _, entry := range stopped {
		e.releaseSource(entry.spec.Source)
	}
	if len(stopped) > 0 {
		e.claimsChanged()
	}
}

// lost stops a branch whose worker found its claim held by another replica
// (branch.OutcomeLost): its watches stop here and nothing more is
// committed; the claim is the other replica's, so it is not released. It
// runs apart from the outcome stream, which the stopping worker may still
// be sending on.
func (e *Engine) lost(key branch.Key) {
	go e.Release(context.Background(), key, false)
}

// StopMoved stops GitTarget t here when it runs on a branch other than key
// (its spec moved it to a branch another replica owns). A target still on
// key is left to the branch's release, which lets the worker commit what
// it holds: removing it from the worker would drop its pending writes,
// which the journal then forgets too.
func (e *Engine) StopMoved(ctx context.Context, t branch.TargetKey, key branch.Key) {
	e.mu.Lock()
	entry := e.targets[t]
	e.mu.Unlock()
	if entry != nil && entry.spec.Worker != key {
		e.RemoveTarget(ctx, t)
	}
}
