package mirror

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// Observer is told what targets do, for metrics and status.
type Observer interface {
	// Forwarded: an object event of kind ("upsert", "delete") went to the
	// worker.
	Forwarded(target branch.TargetKey, kind string, object manifest.ObjectID)
	// Refused: an object was not written, for reason.
	ObjectRefused(target branch.TargetKey, reason string, object manifest.ObjectID)
	StreamObserver() watch.Observer
	// ReplayEnded: one stream's replay reported these objects of scope, and
	// no others exist.
	ReplayEnded(target branch.TargetKey, scope manifest.SweepScope, reported []watch.ObjectKey)
	// Replayed: every stream of the target has finished its replay.
	Replayed(target branch.TargetKey)
	// StreamPhase: one of the target's streams changed phase (replaying,
	// running, failing, not served); the target's summary says which.
	StreamPhase(target branch.TargetKey)
	// StreamForbidden: the source's RBAC began refusing a stream's list or
	// watch; the stream retries with backoff.
	StreamForbidden(target branch.TargetKey, refusal watch.Forbidden)
}

// Target mirrors one GitTarget: one watch stream per claim, all feeding the
// target's branch worker.
type Target struct {
	Key branch.TargetKey
	// ctx bounds every stream: the manager's lifetime, not a reconcile's.
	ctx      context.Context
	client   dynamic.Interface
	metadata metadata.Interface
	sink     Sink
	observer Observer
	log      logr.Logger
	clock    clock.Clock
	// attribution names the authors of live changes; nil in
	// configured-author mode.
	attribution *Attribution
	// cursors stores the streams' resume cursors; nil without Redis.
	cursors    *cursorKeeper
	stopKeeper context.CancelFunc

	mu sync.Mutex
	// updated is set once the first Update has run: only the streams it
	// starts may resume from a stored cursor.
	updated   bool
	streams   map[claimKey]*running
	sensitive bool
	// operatorSecrets are never mirrored (SetOperatorSecrets).
	operatorSecrets map[types.NamespacedName]bool
}

type claimKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

type running struct {
	claim  rules.Claim
	stream *watch.Stream
	cancel context.CancelFunc
	done   chan struct{}
	// synced: the stream's replay ended, or it resumed from its cursor.
	synced bool
	// catchingUp: it resumed, and the events its watch re-delivers from
	// the cursor are still coming (up to watch.CaughtUp).
	catchingUp bool
}

// TargetOptions builds a Target.
type TargetOptions struct {
	Key    branch.TargetKey
	Client dynamic.Interface
	// Metadata lists names and resourceVersions for a resume's catch-up;
	// nil lists through Client.
	Metadata metadata.Interface
	Sink     Sink
	Observer Observer
	Log      logr.Logger
	Clock    clock.Clock
	// Attribution names the authors of live changes; nil is
	// configured-author mode.
	Attribution *Attribution
	// Cursors, when set, keeps the streams' resume cursors; nil runs
	// without (every start replays).
	Cursors *Cursors
}

// NewTarget returns a target with no streams; Update starts them. Streams
// run until ctx ends or Stop.
func NewTarget(ctx context.Context, o TargetOptions) *Target {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	t := &Target{Key: o.Key, ctx: ctx, client: o.Client, metadata: o.Metadata, sink: o.Sink, observer: o.Observer, log: o.Log, clock: o.Clock,
		attribution: o.Attribution, streams: map[claimKey]*running{}, stopKeeper: func() {}}
	if o.Cursors != nil && o.Cursors.Store != nil {
		t.cursors = newCursorKeeper(*o.Cursors, o.Key, o.Sink, o.Clock, o.Log)
		var kctx context.Context
		kctx, t.stopKeeper = context.WithCancel(ctx)
		go t.cursors.run(kctx)
	}
	return t
}

// SetSensitiveWritable says whether sensitive objects can be written
// (encryption is configured). Until then they are refused, never written in
// plaintext.
func (t *Target) SetSensitiveWritable(ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sensitive = ok
}

// SetOperatorSecrets names the Secrets that hold the operator's own
// credentials and keys. They are never mirrored, not even encrypted: a
// private key has no business in the repository it protects.
func (t *Target) SetOperatorSecrets(names []types.NamespacedName) {
	set := make(map[types.NamespacedName]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.operatorSecrets = set
}

// isOperatorSecret reports whether obj is one of the operator's Secrets.
func (t *Target) isOperatorSecret(gvr schema.GroupVersionResource, namespace, name string) bool {
	if gvr.Group != "" || gvr.Resource != "secrets" {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.operatorSecrets[types.NamespacedName{Namespace: namespace, Name: name}]
}

func (t *Target) sensitiveWritable() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sensitive
}

// Update makes the running streams match claims: new claims start with a
// replay, dropped claims stop, claims whose operations changed restart.
func (t *Target) Update(claims []rules.Claim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	want := map[claimKey]rules.Claim{}
	for _, c := range claims {
		want[claimKey{c.GVR, c.Namespace}] = c
	}
	for key, r := range t.streams {
		if c, ok := want[key]; !ok || !sameClaim(c, r.claim) {
			t.stopLocked(key, r)
			if t.cursors != nil {
				t.cursors.forget(r.claim)
			}
		}
	}
	for key, c := range want {
		if _, ok := t.streams[key]; !ok {
			t.startLocked(key, c)
		}
	}
	t.updated = true
}

func sameClaim(a, b rules.Claim) bool {
	if a.Kind != b.Kind || a.Sensitive != b.Sensitive || len(a.Operations) != len(b.Operations) {
		return false
	}
	for i := range a.Operations {
		if a.Operations[i] != b.Operations[i] {
			return false
		}
	}
	return true
}

func (t *Target) startLocked(key claimKey, c rules.Claim) {
	if t.attribution != nil {
		t.attribution.Follow(t.attribution.stream(c))
	}
	glue := &streamGlue{target: t, claim: c}
	stream := &watch.Stream{
		Client:   t.client,
		Metadata: t.metadata,
		Scope:    watch.Scope{GVR: c.GVR, Namespace: c.Namespace},
		Handler:  glue.handle,
		Prepare:  glue.prepare,
		Observer: t.observer.StreamObserver(),
		Clock:    t.clock,
		Log:      t.log,
		OnForbidden: func(refusal watch.Forbidden) {
			t.observer.StreamForbidden(t.Key, refusal)
		},
		OnPhase: func(watch.Phase) { t.observer.StreamPhase(t.Key) },
		// The attribution join matches an admission review of an update by
		// the version it was made against.
		TrackPrevious: t.attribution != nil,
	}
	if t.cursors != nil {
		stream.Cursor = t.cursors.cursor(c, !t.updated)
	}
	sctx, cancel := context.WithCancel(t.ctx)
	r := &running{claim: c, stream: stream, cancel: cancel, done: make(chan struct{})}
	t.streams[key] = r
	go func() {
		defer close(r.done)
		// A stream of a target that is stopping may end with its last
		// change refused (the worker takes nothing under an ended context,
		// branch.Worker.Write), before its own context is seen to end:
		// that is the stop, not a failure.
		if err := stream.Run(sctx); err != nil && t.ctx.Err() == nil {
			t.log.Error(err, "watch stream stopped", "scope", stream.Scope.String())
		}
	}()
}

func (t *Target) stopLocked(key claimKey, r *running) {
	r.cancel()
	delete(t.streams, key)
}

// Stop ends every stream and waits for them. Stored cursors stay: they
// serve the next process, or expire.
func (t *Target) Stop() {
	t.stopKeeper()
	t.mu.Lock()
	var all []*running
	for key, r := range t.streams {
		all = append(all, r)
		t.stopLocked(key, r)
	}
	t.mu.Unlock()
	for _, r := range all {
		<-r.done
	}
}

// streamsState is how far a target's streams are with their replay or
// catch-up.
type streamsState struct{ synced, catchingUp bool }

// settled: every stream replayed or caught up, so the writes the target's
// start handed the worker are complete: its held window can close at once
// instead of waiting for the commit window's silence. A catch-up is one
// unit like a replay: the last replay to end does not close a window while
// another stream's re-delivered events are still coming.
func (s streamsState) settled() bool { return s.synced && !s.catchingUp }

// markStream applies mark to the claim's stream and reports the state of
// all the target's streams after it.
func (t *Target) markStream(c rules.Claim, mark func(*running)) streamsState {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.streams[claimKey{c.GVR, c.Namespace}]; ok {
		mark(r)
	}
	state := streamsState{synced: true}
	for _, r := range t.streams {
		state.synced = state.synced && r.synced
		state.catchingUp = state.catchingUp || r.catchingUp
	}
	return state
}

func (t *Target) refuse(reason string, id manifest.ObjectID) {
	t.observer.ObjectRefused(t.Key, reason, id)
}

// Summary counts the target's streams by phase.
type Summary struct {
	Total, Running, Replaying, Failing int
	// Forbidden lists the streams the source's RBAC refuses, by scope.
	Forbidden []watch.Forbidden
	// NotServed lists the streams whose type the source no longer serves
	// (a deleted CRD), sorted; they are not counted as Failing.
	NotServed []watch.Scope
}

// Summary reports the streams by phase, for GitTarget status.
func (t *Target) Summary() Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Summary{Total: len(t.streams)}
	for _, r := range t.streams {
		if refusal := r.stream.Forbidden(); refusal != nil {
			s.Forbidden = append(s.Forbidden, *refusal)
		}
		switch r.stream.Phase() {
		case watch.PhaseRunning:
			s.Running++
		case watch.PhaseFailing:
			s.Failing++
		case watch.PhaseNotServed:
			s.NotServed = append(s.NotServed, r.stream.Scope)
		default:
			s.Replaying++
		}
	}
	// Map order would reorder the status message on every read.
	slices.SortFunc(s.Forbidden, func(a, b watch.Forbidden) int { return strings.Compare(a.Scope.String(), b.Scope.String()) })
	slices.SortFunc(s.NotServed, func(a, b watch.Scope) int { return strings.Compare(a.String(), b.String()) })
	return s
}

type nopObserver struct{}

func (nopObserver) Forwarded(branch.TargetKey, string, manifest.ObjectID)                {}
func (nopObserver) ReplayEnded(branch.TargetKey, manifest.SweepScope, []watch.ObjectKey) {}
func (nopObserver) ObjectRefused(branch.TargetKey, string, manifest.ObjectID)            {}
func (nopObserver) StreamObserver() watch.Observer                                       { return watch.NopObserver{} }
func (nopObserver) Replayed(branch.TargetKey)                                            {}
func (nopObserver) StreamForbidden(branch.TargetKey, watch.Forbidden)                    {}
func (nopObserver) StreamPhase(branch.TargetKey)                                         {}
