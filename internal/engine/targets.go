package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/mirror"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// TargetSpec is everything the engine needs to mirror one GitTarget.
type TargetSpec struct {
	Key branch.TargetKey
	// UID is the GitTarget's: its resume cursors are filed under it.
	UID    types.UID
	Path   string
	Worker branch.Key
	// Settings build the worker when it does not run yet or changed.
	Settings WorkerSettings
	// Source is the ClusterProvider name; EnsureSource must have run.
	Source string
	Claims []rules.Claim
	// Encryption encrypts the target's sensitive objects (PrepareEncryption
	// builds it); without an Encryptor they are refused, never written in
	// plaintext.
	Encryption EncryptionSettings
	// OperatorSecrets are the Secrets of the source that hold the operator's
	// own credentials and keys; they are never mirrored.
	OperatorSecrets []types.NamespacedName
	// Placement is spec.placement: where new objects go. A change reaches
	// the worker on the next apply without restarting the streams; files
	// already in Git stay where they are.
	Placement manifest.Placement
	// Resync is a user's request for a full resync not yet handled (the
	// value of the resync-requested-at annotation), "" for none. A value
	// the running target has not seen restarts its streams with a replay,
	// dropping their resume cursors.
	Resync string
	// Suspended is spec.suspend: the streams watch, nothing reaches the
	// worker. A change restarts the streams; on resume their replay is
	// one catch-up commit.
	Suspended bool
}

type targetEntry struct {
	spec       TargetSpec
	mirror     *mirror.Target
	worker     *branch.Worker
	source     *Source
	lastCommit *branch.CommitInfo
	// lastError is the last commit failure since the last commit; whether
	// the path holds unsupported content is read from it, so the two can
	// never disagree.
	lastError error
	// refused are the objects not written now.
	refused refusalSet
	// pullRequest is where the target's pull request stands (mode
	// PullRequest); rebuild asks the next apply to replay its streams.
	pullRequest *branch.PullRequestInfo
	rebuild     bool
}

// TargetStatus is the runtime half of a GitTarget's status.
type TargetStatus struct {
	Streams    mirror.Summary
	LastCommit *branch.CommitInfo
	// LastError is the last commit failure since the last commit.
	LastError error
	// Unsupported: the path holds content the operator will not manage.
	Unsupported bool
	// Refused lists the objects not written now, sorted by reason, then
	// object.
	Refused []Refusal
	// PullRequest is where the target's pull request stands, nil before
	// its worker said (or in direct mode).
	PullRequest *branch.PullRequestInfo
}

// ApplyTarget makes the engine mirror spec: the worker runs, knows the
// target, and one watch stream per claim runs against the source. A change
// of worker, source or encryption keys restarts the target's streams (with
// a replay), so sensitive objects are written, or re-encrypted, at once.
func (e *Engine) ApplyTarget(spec TargetSpec) error {
	runCtx, err := e.running()
	if err != nil {
		return err
	}
	e.handover.RLock()
	defer e.handover.RUnlock()
	if !e.Owns(spec.Worker) {
		e.StopMoved(runCtx, spec.Key, spec.Worker)
		return ErrNotOwner
	}
	src := e.SourceFor(spec.Source)
	if src == nil {
		return fmt.Errorf("source %s is not connected", spec.Source)
	}
	worker, replaced, err := e.ensureWorker(runCtx, spec.Worker, spec.Settings)
	if err != nil {
		return fmt.Errorf("GitTarget %s: %w", spec.Key, err)
	}
	e.keepEncryptor(&spec)
	if err := worker.SetTarget(runCtx, branch.Target{Key: spec.Key, Path: spec.Path, Encryptor: encryptorOf(spec.Encryption.Encryptor),
		Placement: spec.Placement}); err != nil {
		return fmt.Errorf("registering GitTarget %s with its branch worker: %w", spec.Key, err)
	}
	e.mu.Lock()
	entry := e.targets[spec.Key]
	// A newly excluded Secret must leave Git: the replay's sweep removes it.
	resync := spec.Resync != "" && (entry == nil || entry.spec.Resync != spec.Resync)
	// A pull request rebuilt on its base (Outcome.Rebuild) replays once.
	rebuild := entry != nil && entry.rebuild
	resync = resync || rebuild
	// A resumed target replays, so its catch-up is one commit; a
	// suspended one stops handing its streams' events to the worker.
	restart := entry == nil || replaced || resync || entry.worker != worker || entry.source != src || entry.spec.Path != spec.Path ||
		entry.spec.Encryption.Encryptor != spec.Encryption.Encryptor || !slices.Equal(entry.spec.OperatorSecrets, spec.OperatorSecrets) ||
		entry.spec.Suspended != spec.Suspended
	var old *mirror.Target
	if restart {
		var pullRequest *branch.PullRequestInfo
		if entry != nil {
			old, pullRequest = entry.mirror, entry.pullRequest
		}
		entry = &targetEntry{spec: spec, worker: worker, source: src, refused: refusalSet{}, pullRequest: pullRequest}
		entry.mirror = mirror.NewTarget(runCtx, mirror.TargetOptions{
			Key: spec.Key, Client: src.Dynamic, Metadata: src.Metadata, Sink: sinkFor(worker, spec.Suspended), Observer: &targetObserver{engine: e, metrics: e.opts.Metrics},
			Log: e.opts.Log.WithValues("gittarget", spec.Key.String()), Attribution: e.opts.Attribution.forSource(src),
			Cursors: e.cursorsFor(spec, old == nil, resync),
		})
		e.targets[spec.Key] = entry
	}
	entry.spec = spec
	entry.refused.retain(spec.Claims)
	e.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	if resync && !rebuild {
		// The replay is compared with the branch as it is now, not as the
		// worker last saw it: a rewrite under a running operator is healed.
		if err := worker.Reread(runCtx); err != nil {
			return fmt.Errorf("asking the branch worker of GitTarget %s to read the branch again: %w", spec.Key, err)
		}
	}
	if restart && spec.Suspended {
		// After the old streams stopped, so nothing they sent is left behind.
		if err := worker.Suspend(runCtx, spec.Key); err != nil {
			return fmt.Errorf("suspending GitTarget %s in its branch worker: %w", spec.Key, err)
		}
	}
	entry.mirror.SetSensitiveWritable(spec.Encryption.Encryptor != nil)
	entry.mirror.SetOperatorSecrets(spec.OperatorSecrets)
	entry.mirror.Update(spec.Claims)
	e.claimsChanged()
	return nil
}

// SuspendTarget suspends a mirrored target at once, with the spec it runs
// under: a reconcile that stops before handing the engine a new spec (its
// GitProvider not Ready, say) must still stop the writes. Nothing happens
// to a target not mirrored or already suspended.
func (e *Engine) SuspendTarget(key branch.TargetKey) error {
	e.mu.Lock()
	entry := e.targets[key]
	e.mu.Unlock()
	if entry == nil || entry.spec.Suspended {
		return nil
	}
	spec := entry.spec
	spec.Suspended = true
	return e.ApplyTarget(spec)
}

// cursorsFor is where target spec keeps its resume cursors; nil without a
// store. Only a target's first run in this process resumes from them: a
// restart in process (new keys, worker, source or path) must replay. A
// requested resync drops them.
func (e *Engine) cursorsFor(spec TargetSpec, first, resync bool) *mirror.Cursors {
	if e.opts.Cursors == nil || spec.UID == "" {
		return nil
	}
	secrets := make([]string, len(spec.OperatorSecrets))
	for i, s := range spec.OperatorSecrets {
		secrets[i] = s.String()
	}
	parts := []string{spec.Path, spec.Worker.String(), spec.Source, spec.Encryption.Encryptor.Fingerprint(), strings.Join(secrets, ",")}
	if spec.Suspended {
		// A suspended target's cursors pass changes Git never got: a run
		// after the resume must not start from them.
		parts = append(parts, "suspended")
	}
	return &mirror.Cursors{
		Store: e.opts.Cursors, Observer: e.opts.CursorObserver, Target: spec.UID, Resume: first && !resync, Resync: resync,
		Config: mirror.ConfigFingerprint(parts...),
	}
}

// sinkFor is where a target's streams send: its worker, or nowhere while
// the target is suspended.
func sinkFor(worker *branch.Worker, suspended bool) mirror.Sink {
	if suspended {
		return suspendedSink{worker}
	}
	return worker
}

// suspendedSink drops a suspended target's writes and sweeps: the streams
// keep watching (status, refusals), and the replay on resume writes the
// state they saw. The rest is the worker's: it holds nothing for a
// suspended target, so its cursors are stored at once (under their own
// fingerprint).
type suspendedSink struct{ *branch.Worker }

func (suspendedSink) Write(context.Context, branch.TargetKey, branch.Author, branch.Write) error {
	return nil
}

func (suspendedSink) Sync(context.Context, branch.TargetKey, *branch.Sweep, bool) error { return nil }

// keepEncryptor reuses the running encryptor when a new one was built
// from the same keys (the metadata cache could not vouch for the key
// Secret's version): its cache of encrypted output lives on, and the
// target is not restarted. The fingerprint stays the new one, so the next
// reconcile finds it running.
func (e *Engine) keepEncryptor(spec *TargetSpec) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if entry := e.targets[spec.Key]; entry != nil && entry.spec.Encryption.Encryptor.Fingerprint() == spec.Encryption.Encryptor.Fingerprint() {
		spec.Encryption.Encryptor = entry.spec.Encryption.Encryptor
	}
}

// encryptorOf keeps a nil encryptor a nil interface for the worker.
func encryptorOf(e *encryption.Encryptor) branch.Encryptor {
	if e == nil {
		return nil
	}
	return e
}

// RemoveTarget stops mirroring a GitTarget, and forgets the claims noted
// for it (NoteClaims). Its files stay in Git.
func (e *Engine) RemoveTarget(ctx context.Context, key branch.TargetKey) {
	e.mu.Lock()
	entry := e.targets[key]
	delete(e.targets, key)
	_, noted := e.elsewhere[key]
	delete(e.elsewhere, key)
	e.mu.Unlock()
	if entry == nil {
		if noted {
			e.claimsChanged()
		}
		return
	}
	entry.mirror.Stop()
	_ = entry.worker.RemoveTarget(ctx, key)
	e.releaseWorker(entry.spec.Worker)
	e.releaseSource(entry.spec.Source)
	e.claimsChanged()
}

// LocalClaims are the claims of every target that reads the operator's own
// cluster, merged (rules.Merge): the types whose writes that cluster's API
// server can show the admission observer. A suspended target's count too:
// its streams keep watching. With several replicas they include the
// targets the others run (NoteClaims), since one elected replica writes
// the observer's registration for all.
func (e *Engine) LocalClaims() []rules.Claim {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all []rules.Claim
	for _, t := range e.targets {
		if t.source != nil && t.source.Local {
			all = append(all, t.spec.Claims...)
		}
	}
	for key, claims := range e.elsewhere {
		if e.targets[key] == nil {
			all = append(all, claims...)
		}
	}
	return rules.Merge(rules.Result{Claims: all})
}

func (e *Engine) claimsChanged() {
	if e.opts.ClaimsChanged != nil {
		e.opts.ClaimsChanged()
	}
}

// Status reports a target's runtime state; ok is false when it is not
// mirrored.
func (e *Engine) Status(key branch.TargetKey) (TargetStatus, bool) {
	e.mu.Lock()
	entry := e.targets[key]
	if entry == nil {
		e.mu.Unlock()
		return TargetStatus{}, false
	}
	var unsupported *manifest.UnsupportedContentError
	st := TargetStatus{LastCommit: entry.lastCommit, LastError: entry.lastError, Unsupported: errors.As(entry.lastError, &unsupported),
		Refused: entry.refused.list(), PullRequest: entry.pullRequest}
	m := entry.mirror
	e.mu.Unlock()
	st.Streams = m.Summary()
	return st, true
}

// UnannouncedRefusals returns the target's refusals that have not been
// announced yet (the GitTarget controller emits an Event for each) and
// marks them announced.
func (e *Engine) UnannouncedRefusals(key branch.TargetKey) []Refusal {
	e.mu.Lock()
	defer e.mu.Unlock()
	if entry := e.targets[key]; entry != nil {
		return entry.refused.unannounced()
	}
	return nil
}

// updateRefusals changes a target's refusals under the lock and refreshes
// its status when they changed.
func (e *Engine) updateRefusals(t branch.TargetKey, change func(refusalSet) bool) bool {
	e.mu.Lock()
	changed := false
	if entry := e.targets[t]; entry != nil {
		changed = change(entry.refused)
	}
	e.mu.Unlock()
	if changed {
		e.notify(t)
	}
	return changed
}

// targetObserver records refusals per target for status and forwards
// everything to metrics.
type targetObserver struct {
	engine  *Engine
	metrics Metrics
}

func (o *targetObserver) Forwarded(t branch.TargetKey, kind string, id manifest.ObjectID) {
	if o.metrics != nil {
		o.metrics.Forwarded(t, kind, id)
	}
	o.engine.updateRefusals(t, func(s refusalSet) bool { return s.forwarded(id, kind == "delete") })
}

func (o *targetObserver) ObjectRefused(t branch.TargetKey, reason string, id manifest.ObjectID) {
	if o.metrics != nil {
		o.metrics.ObjectRefused(t, reason, id)
	}
	if o.engine.updateRefusals(t, func(s refusalSet) bool { return s.refuse(Refusal{Object: id, Reason: reason}, false) }) {
		o.engine.opts.Log.Info("not writing an object", "gittarget", t.String(), "object", id.String(), "reason", reason)
	}
}

// ReplayEnded forgets the refusals of objects a replay no longer reports.
func (o *targetObserver) ReplayEnded(t branch.TargetKey, scope manifest.SweepScope, reported []watch.ObjectKey) {
	o.engine.updateRefusals(t, func(s refusalSet) bool { return s.replayed(scope, reported) })
}

// Replayed refreshes the target's status at once: a replay that changed
// nothing makes no commit, and would otherwise show on the next requeue.
// Metrics hear it first, so the target's series exist by the time its
// status says the replay is over.
func (o *targetObserver) Replayed(t branch.TargetKey) {
	if o.metrics != nil {
		o.metrics.Replayed(t)
	}
	o.engine.notify(t)
}

// StreamPhase refreshes the target's status at once: StreamsRunning
// follows every stream's replay, failure and recovery, not the resync.
func (o *targetObserver) StreamPhase(t branch.TargetKey) {
	o.engine.notify(t)
}

// StreamForbidden refreshes the target's status at once, so the missing
// grant shows without waiting for the next resync.
func (o *targetObserver) StreamForbidden(t branch.TargetKey, refusal watch.Forbidden) {
	if o.metrics != nil {
		o.metrics.StreamForbidden(t, refusal)
	}
	o.engine.notify(t)
}

func (o *targetObserver) StreamObserver() watch.Observer {
	if o.metrics == nil {
		return watch.NopObserver{}
	}
	return o.metrics.StreamObserver()
}

// ErrTargetNotMirrored: a CommitRequest names a GitTarget the engine does
// not mirror (not Ready yet, or gone).
var ErrTargetNotMirrored = errors.New("the GitTarget is not being mirrored")

// AttachCommitRequest hands a CommitRequest to its target's branch worker.
// In configured-author mode every window is the committer's and names
// nobody, so the request claims no actor there whoever submitted it: the
// submitter still shows on the CommitRequest, but no window could be told
// apart by author.
func (e *Engine) AttachCommitRequest(ctx context.Context, r *branch.Request) error {
	if _, err := e.running(); err != nil {
		return err
	}
	e.mu.Lock()
	entry := e.targets[r.Target]
	e.mu.Unlock()
	if entry == nil {
		return ErrTargetNotMirrored
	}
	if e.opts.Attribution == nil {
		r.Submitter = nil
	}
	return entry.worker.Attach(ctx, r)
}
