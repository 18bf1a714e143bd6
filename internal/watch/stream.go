// Package watch follows Kubernetes objects by watch alone: one Stream per
// (GitTarget, GVR, scope), opened with sendInitialEvents so every (re)connect
// replays current state and ends with the initial-events-end bookmark, where
// the consumer runs its mark-and-sweep.
package watch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/retry"
)

// Scope is what one stream follows: a resource in one namespace, or
// cluster-wide when Namespace is empty.
type Scope struct {
	GVR       schema.GroupVersionResource
	Namespace string
}

func (s Scope) String() string {
	if s.Namespace == "" {
		return s.Resource() + " (cluster)"
	}
	return s.Resource() + " in " + s.Namespace
}

// Resource names the resource as kubectl does: resource.group, or the
// resource alone in the core group.
func (s Scope) Resource() string {
	if s.GVR.Group == "" {
		return s.GVR.Resource
	}
	return s.GVR.Resource + "." + s.GVR.Group
}

// EventKind says what happened.
type EventKind int

const (
	// ReplayStart: a replay begins; the Upserts up to Synced are current
	// state.
	ReplayStart EventKind = iota
	// Upsert: the object exists with this content (ADDED or MODIFIED).
	Upsert
	// Delete: the object is gone.
	Delete
	// Synced: a replay ended; Present lists every object it reported, and
	// anything else of this scope that Git still holds no longer exists.
	Synced
	// Resumed: the stream started from its cursor instead of a replay; Git
	// already holds everything up to it. The re-delivered events that
	// follow are only those no older than where their object stood when
	// the stream resumed (see catchUp). Should the API server refuse the
	// cursor, a ReplayStart follows.
	Resumed
	// CaughtUp: a resumed stream has handed on everything the watch
	// re-delivered from its cursor (the events marked CatchUp), or found
	// there was nothing; what follows is live. A catch-up is one unit, like
	// a replay: the worker holds its writes until every stream of the
	// target has caught up or replayed.
	CaughtUp
)

// ObjectKey names an object within a scope.
type ObjectKey struct{ Namespace, Name string }

// Event is one thing a stream reports to its handler.
type Event struct {
	Kind EventKind
	// Type is the watch event type behind an Upsert or Delete (ADDED,
	// MODIFIED, DELETED), for operation filters.
	Type   apiwatch.EventType
	Scope  Scope
	Object *unstructured.Unstructured
	// Replay is true for objects reported by an initial replay.
	Replay bool
	// CatchUp is true for a live Upsert or Delete that a resumed watch
	// re-delivered from before the stream resumed (up to CaughtUp).
	CatchUp bool
	// Present is set on Synced.
	Present []ObjectKey
	// Received is when the stream read the event.
	Received time.Time
	// Prepared is what Stream.Prepare returned for a live Upsert or Delete.
	Prepared any
	// PreviousVersion is, on an Upsert or Delete of a stream that tracks
	// versions (Stream.TrackPrevious), the resourceVersion of the stream's
	// previous event for the object: the version a write was made against.
	// It is "" for the object's first event since it was created, and when
	// the stream has none (its first event after a resume, when the
	// catch-up list did not have the object).
	PreviousVersion string
}

// Handler consumes a stream's events in order. It may block (back-pressure
// reaches the watch, nothing is dropped); an error stops the stream.
type Handler func(ctx context.Context, ev Event) error

// Phase is where a stream is in its life.
type Phase int32

const (
	PhaseStarting Phase = iota
	PhaseReplaying
	PhaseRunning
	PhaseFailing
	// PhaseNotServed: the source answers 404 for the resource, so the type
	// has left its API surface (its CRD was deleted). The stream keeps
	// retrying, should it come back, until discovery confirms the removal
	// and its claim is dropped.
	PhaseNotServed
)

// Stream follows one Scope on one source cluster.
type Stream struct {
	Client dynamic.Interface
	// Metadata, when set, lists what a resume's catch-up needs (names and
	// resourceVersions) without the objects; nil lists them through Client.
	Metadata metadata.Interface
	Scope    Scope
	Handler  Handler
	Observer Observer
	Clock    clock.Clock
	Log      logr.Logger
	// MinBackoff and MaxBackoff bound the wait between failed connects; up
	// to half of it again is added at random, so the streams that lost an
	// API server together (a restart) do not reconnect in lockstep.
	MinBackoff, MaxBackoff time.Duration
	// Sleep waits between failed connects and reports whether d passed
	// before ctx ended; nil waits on Clock.
	Sleep func(ctx context.Context, d time.Duration) bool
	// OnForbidden, when set, is called when the source starts refusing the
	// stream's list or watch with 403 Forbidden (once per refusal spell, not
	// per retry).
	OnForbidden func(Forbidden)
	// OnPhase, when set, is called from the stream's goroutine whenever its
	// phase changes, so status can follow at once.
	OnPhase func(Phase)
	// Cursor, when set, is where the stream starts (a normal watch from the
	// stored resourceVersion, announced by Resumed) and is kept current.
	Cursor Cursor
	// Prepare, when set, is the part of handling a live Upsert or Delete
	// that may wait (attribution's grace for an author). The stream runs it
	// off its own goroutine, per object: one object's events are prepared
	// and handed to Handler (with Event.Prepared set to what Prepare
	// returned) in watch order, while other objects' go on beside them, so
	// one object's wait never holds back another's. Handler is still
	// called one event at a time, and every other event (a replay, Synced,
	// Resumed) is handled only after the live events read before it.
	Prepare func(ctx context.Context, ev Event) any
	// TrackPrevious, when set, has the stream remember each object's last
	// resourceVersion (replayed, listed by a resume's catch-up, or watched)
	// and set Event.PreviousVersion: the attribution join matches an
	// admission review of an update by the version it was made against.
	TrackPrevious bool

	phase     atomic.Int32
	forbidden atomic.Pointer[Forbidden]
	// resuming: the watch runs from the cursor and has not yet shown the
	// API server still has it (stream goroutine only).
	resuming bool
	// lanes run Prepare; nil without it.
	lanes *lanes
	// catchingUp: the stream resumed from its cursor and has yet to list
	// where its objects stand, which it does at the first event the watch
	// sends (a restart with nothing changed lists nothing); catchUp judges
	// the re-delivered events until the watch passes that list (stream
	// goroutine only).
	catchingUp bool
	catchUp    *catchUp
	// shortWatches counts the catch-up's short watches (catchUpTimeout);
	// reopen: the catch-up's list was just taken and the watch has not
	// passed it, so the watch is reopened short from where it is (stream
	// goroutine only).
	shortWatches int
	reopen       bool
	// versions are the objects' last resourceVersions, with TrackPrevious
	// (stream goroutine only).
	versions map[ObjectKey]string
	// versionsUnknown: the stream resumed from its cursor, tracks versions
	// and has yet to list them (stream goroutine only): the catch-up's list
	// does, and when a bookmark ended the catch-up before any event, the
	// first event lists them.
	versionsUnknown bool
}

// Forbidden is the source's RBAC refusing a stream's list or watch. Unlike
// a network failure it does not heal by itself: someone must grant the
// operator list and watch on the scope, so it is reported until a connect
// succeeds.
type Forbidden struct {
	Scope Scope
	// Message is the API server's, which names the user and the refused verb.
	Message string
}

// errReplay asks the loop for a fresh replay (410 Gone, or a watch closed
// before its replay finished).
var errReplay = errors.New("replay needed")

// Phase reports the stream's phase; safe from any goroutine.
func (s *Stream) Phase() Phase { return Phase(s.phase.Load()) }

// setPhase moves the stream to p and tells OnPhase when that is a change.
func (s *Stream) setPhase(p Phase) {
	if Phase(s.phase.Swap(int32(p))) != p && s.OnPhase != nil {
		s.OnPhase(p)
	}
}

// failurePhase tells a type the source no longer serves from a failure to
// reach the source.
func failurePhase(err error) Phase {
	if apierrors.IsNotFound(err) {
		return PhaseNotServed
	}
	return PhaseFailing
}

// Forbidden reports the refusal that made the last connect fail, nil when
// the last connect succeeded or failed for another reason; safe from any
// goroutine. It stays set while a retry is under way, so a status read
// between two attempts still sees it.
func (s *Stream) Forbidden() *Forbidden { return s.forbidden.Load() }

// Run follows the scope until ctx ends or the handler fails. A closed watch
// resumes from the last resourceVersion; 410 Gone and unfinished replays
// start a fresh replay; connect failures back off.
func (s *Stream) Run(ctx context.Context) error {
	s.defaults()
	if s.Prepare != nil {
		s.lanes = newLanes(s)
		defer s.lanes.wait() // nothing of a stopped stream runs on
	}
	backoff := s.connectBackoff()
	resourceVersion := s.start(ctx)
	if resourceVersion != "" {
		if err := s.deliver(ctx, Event{Kind: Resumed, Scope: s.Scope, Received: s.Clock.Now()}); err != nil {
			return ifRunning(ctx, err)
		}
		s.Observer.Resumed(s.Scope)
	}
	for ctx.Err() == nil {
		var err error
		if resourceVersion == "" {
			s.setPhase(PhaseReplaying)
			s.Observer.Replay(s.Scope)
			resourceVersion, err = s.replay(ctx)
		} else {
			s.Observer.Reconnect(s.Scope)
			resourceVersion, err = s.follow(ctx, resourceVersion, nil)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errHandler):
			return err
		case errors.Is(err, errReplay):
			resourceVersion = ""
			backoff = s.connectBackoff()
		case err != nil:
			s.setPhase(failurePhase(err))
			s.recordFailure(err)
			delay := backoff.Step()
			s.Log.Info("watch failed; retrying", "scope", s.Scope.String(), "in", delay.String(), "error", err.Error())
			if !s.sleep(ctx, delay) {
				return nil
			}
		default:
			backoff = s.connectBackoff()
		}
	}
	return nil
}

// recordFailure keeps a 403 Forbidden for Forbidden() and tells OnForbidden
// when a refusal spell begins; any other failure ends the spell.
func (s *Stream) recordFailure(err error) {
	if !apierrors.IsForbidden(err) {
		s.forbidden.Store(nil)
		return
	}
	refusal := &Forbidden{Scope: s.Scope, Message: apiMessage(err)}
	if s.forbidden.Swap(refusal) == nil && s.OnForbidden != nil {
		s.OnForbidden(*refusal)
	}
}

// connected ends a refusal spell: the source answered a list or watch.
func (s *Stream) connected() { s.forbidden.Store(nil) }

// apiMessage is the API server's own message for a status error, without
// the operator's wrapping.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// connectBackoff is the schedule of waits after failed connects: from
// MinBackoff, doubling to MaxBackoff, jittered.
func (s *Stream) connectBackoff() wait.Backoff { return retry.Exponential(s.MinBackoff, s.MaxBackoff) }

func (s *Stream) defaults() {
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.Observer == nil {
		s.Observer = NopObserver{}
	}
	if s.MinBackoff == 0 {
		s.MinBackoff = 500 * time.Millisecond
	}
	if s.MaxBackoff == 0 {
		s.MaxBackoff = 30 * time.Second
	}
}

func (s *Stream) metadataResource() metadata.ResourceInterface {
	if s.Scope.Namespace == "" {
		return s.Metadata.Resource(s.Scope.GVR)
	}
	return s.Metadata.Resource(s.Scope.GVR).Namespace(s.Scope.Namespace)
}

func (s *Stream) resource() dynamic.ResourceInterface {
	if s.Scope.Namespace == "" {
		return s.Client.Resource(s.Scope.GVR)
	}
	return s.Client.Resource(s.Scope.GVR).Namespace(s.Scope.Namespace)
}

// replay opens a watch with sendInitialEvents and follows it; where the API
// server refuses the streaming list it falls back to LIST then WATCH.
func (s *Stream) replay(ctx context.Context) (string, error) {
	s.catchingUp, s.catchUp = false, nil       // a replay reports current state only
	s.versions, s.versionsUnknown = nil, false // and the versions of its objects anew
	if err := s.deliver(ctx, Event{Kind: ReplayStart, Scope: s.Scope, Received: s.Clock.Now()}); err != nil {
		return "", err
	}
	sendInitial := true
	w, err := s.resource().Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    &sendInitial,
		AllowWatchBookmarks:  true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		if refusesStreamingList(err) {
			s.Log.Info("API server refuses sendInitialEvents; using LIST then WATCH", "scope", s.Scope.String(), "error", err.Error())
			return s.listThenFollow(ctx)
		}
		return "", fmt.Errorf("opening a replaying watch on %s: %w", s.Scope, err)
	}
	return s.consume(ctx, w, "", &replayState{})
}

// follow resumes a watch from resourceVersion; replay, when set, is still
// collecting (the LIST fallback reports its own Synced).
func (s *Stream) follow(ctx context.Context, resourceVersion string, replay *replayState) (string, error) {
	w, err := s.resource().Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true,
		TimeoutSeconds: s.catchUpTimeout()})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			s.gone(err)
			return "", errReplay
		}
		return resourceVersion, fmt.Errorf("resuming the watch on %s from %s: %w", s.Scope, resourceVersion, err)
	}
	if replay == nil {
		s.setPhase(PhaseRunning) // resumed: live again, without a replay
	}
	return s.consume(ctx, w, resourceVersion, replay)
}

// ifRunning is err unless ctx has ended (a stop, not a failure).
func ifRunning(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func refusesStreamingList(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err)
}

func (s *Stream) sleep(ctx context.Context, d time.Duration) bool {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	return retry.Sleep(ctx, s.Clock, d)
}
