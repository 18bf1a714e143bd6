package watch

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiwatch "k8s.io/apimachinery/pkg/watch"
)

// errHandler marks a handler failure, which ends the stream.
var errHandler = errors.New("handler failed")

// replayState collects the keys a replay reported, for the Synced event.
type replayState struct {
	present []ObjectKey
}

// consume reads one watch until it closes. While replay is non-nil, ADDED
// events are marked, and the initial-events-end bookmark reports Synced.
// It returns the last resourceVersion seen; errReplay when the replay must
// start over.
func (s *Stream) consume(ctx context.Context, w apiwatch.Interface, resourceVersion string, replay *replayState) (string, error) {
	defer w.Stop()
	s.connected()
	sentNothing := true
	for {
		var ev apiwatch.Event
		var open bool
		select {
		case <-ctx.Done():
			return resourceVersion, nil
		case <-s.lanesFailed():
			return resourceVersion, s.lanes.failure()
		case ev, open = <-w.ResultChan():
		}
		if !open {
			if replay != nil {
				return "", errReplay // closed before the replay finished
			}
			s.quietShortWatch(sentNothing)
			return resourceVersion, nil
		}
		sentNothing = false
		s.Observer.Event(s.Scope, ev.Type)
		if ev.Type == apiwatch.Error {
			return s.watchError(resourceVersion, ev.Object)
		}
		obj, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return resourceVersion, fmt.Errorf("watch on %s sent %T, not an object", s.Scope, ev.Object)
		}
		var err error
		if replay, err = s.dispatch(ctx, ev.Type, obj, replay); err != nil {
			// Resumed from the version before it, the watch sends this event
			// again: a list that failed before it was handed on (a resume's
			// catch-up, the versions of a tracking stream) loses nothing. A
			// handler's failure ends the stream anyway.
			return resourceVersion, err
		}
		resourceVersion = obj.GetResourceVersion()
		if s.reopenAfterList() {
			return resourceVersion, nil // resumed from here, short
		}
	}
}

// dispatch hands one event to the handler and returns the replay state
// after it (nil once the replay has ended).
func (s *Stream) dispatch(ctx context.Context, typ apiwatch.EventType, obj *unstructured.Unstructured, replay *replayState) (*replayState, error) {
	now := s.Clock.Now()
	switch typ {
	case apiwatch.Bookmark:
		if replay == nil {
			if s.catchingUp {
				// A bookmark before any event: nothing up to it was
				// re-delivered, so there is nothing to catch up.
				s.catchingUp = false
				if err := s.caughtUp(ctx); err != nil {
					return nil, err
				}
			} else if err := s.endCatchUp(ctx, obj.GetResourceVersion()); err != nil {
				return nil, err
			}
			s.advance(obj.GetResourceVersion())
			return nil, nil
		}
		if obj.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
			return replay, nil
		}
		if err := s.synced(ctx, replay); err != nil {
			return replay, err
		}
		s.advance(obj.GetResourceVersion()) // the snapshot's point, swept
		return nil, nil
	case apiwatch.Added, apiwatch.Modified:
		if replay != nil && typ == apiwatch.Added {
			replay.present = append(replay.present, ObjectKey{obj.GetNamespace(), obj.GetName()})
		}
		return replay, s.object(ctx, replay, Event{Kind: Upsert, Type: typ, Scope: s.Scope, Object: obj, Replay: replay != nil, Received: now})
	case apiwatch.Deleted:
		return replay, s.object(ctx, replay, Event{Kind: Delete, Type: typ, Scope: s.Scope, Object: obj, Received: now})
	}
	return replay, nil
}

// object hands on an Upsert or Delete. A live one older than where its
// object stood when the stream resumed is dropped. The others go to their
// object's lane when the stream has Prepare, and the cursor moves past a
// live one once it is handled; a replay's objects come in no order of
// resourceVersion, so only its end bookmark is a point to resume from.
func (s *Stream) object(ctx context.Context, replay *replayState, ev Event) error {
	if replay != nil {
		s.previous(&ev)
		return s.deliver(ctx, ev)
	}
	superseded, err := s.judge(ctx, ev.Type, ev.Object)
	if err != nil || superseded {
		return err
	}
	if s.versionsUnknown {
		if err := s.listPrevious(ctx); err != nil {
			return err
		}
	}
	ev.CatchUp = s.catchUp != nil
	s.previous(&ev)
	if s.lanes != nil {
		s.resuming = false // the API server answered from the cursor
		err = s.lanes.submit(ctx, ev)
	} else if err = s.deliver(ctx, ev); err == nil {
		s.advance(ev.Object.GetResourceVersion())
	}
	if err != nil || !ev.CatchUp {
		return err
	}
	// The event at the list's own version is the last one re-delivered.
	return s.endCatchUp(ctx, ev.Object.GetResourceVersion())
}

// synced ends a replay. The phase is Running before the handler hears of
// it, so a status read prompted by the Synced event sees the stream live.
func (s *Stream) synced(ctx context.Context, replay *replayState) error {
	s.setPhase(PhaseRunning)
	return s.deliver(ctx, Event{Kind: Synced, Scope: s.Scope, Present: replay.present, Received: s.Clock.Now()})
}

// deliver hands ev to the handler from the stream's goroutine, after
// every live event read before it.
func (s *Stream) deliver(ctx context.Context, ev Event) error {
	if s.lanes != nil {
		if err := s.lanes.drain(); err != nil {
			return err
		}
	}
	return s.handle(ctx, ev)
}

// lanesFailed closes when a lane's handler failed; nil (never) without
// lanes.
func (s *Stream) lanesFailed() <-chan struct{} {
	if s.lanes == nil {
		return nil
	}
	return s.lanes.failed
}

func (s *Stream) handle(ctx context.Context, ev Event) error {
	if err := s.Handler(ctx, ev); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: %w", errHandler, s.Scope, err)
	}
	return nil
}

// watchError turns an ERROR event into what the loop does next: 410 Gone
// means the resourceVersion is compacted away, so only a fresh replay can
// restore a complete picture.
func (s *Stream) watchError(resourceVersion string, obj any) (string, error) {
	status, ok := obj.(*metav1.Status)
	if !ok {
		return resourceVersion, fmt.Errorf("watch on %s sent an error event with %T", s.Scope, obj)
	}
	err := apierrors.FromObject(status)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		s.gone(err)
		return "", errReplay
	}
	return resourceVersion, fmt.Errorf("watch on %s: %w", s.Scope, err)
}

// listThenFollow is the compatibility path for API servers without streaming
// lists: a paged LIST is the replay, then a watch from the list's
// resourceVersion carries on without a gap.
func (s *Stream) listThenFollow(ctx context.Context) (string, error) {
	replay := &replayState{}
	opts := metav1.ListOptions{Limit: 500}
	var listRV string
	for {
		list, err := s.resource().List(ctx, opts)
		if err != nil {
			return "", fmt.Errorf("listing %s: %w", s.Scope, err)
		}
		s.connected()
		for i := range list.Items {
			obj := &list.Items[i]
			replay.present = append(replay.present, ObjectKey{obj.GetNamespace(), obj.GetName()})
			ev := Event{Kind: Upsert, Type: apiwatch.Added, Scope: s.Scope, Object: obj, Replay: true, Received: s.Clock.Now()}
			s.previous(&ev)
			if err := s.deliver(ctx, ev); err != nil {
				return "", err
			}
		}
		listRV = list.GetResourceVersion()
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if err := s.synced(ctx, replay); err != nil {
		return "", err
	}
	s.advance(listRV)
	return s.follow(ctx, listRV, nil)
}

// previous sets ev.PreviousVersion from the object's last version the
// stream saw and remembers ev's (forgets the object on a Delete), with
// TrackPrevious. The stream goroutine calls it in watch order, before the
// event goes to a lane. A re-delivery of the very version the stream
// already has (a resume's catch-up event at the listed version) has no
// previous version the stream knows of.
func (s *Stream) previous(ev *Event) {
	if !s.TrackPrevious {
		return
	}
	key := ObjectKey{ev.Object.GetNamespace(), ev.Object.GetName()}
	rv := ev.Object.GetResourceVersion()
	if last := s.versions[key]; precedes(last, rv) {
		ev.PreviousVersion = last
	}
	if ev.Kind == Delete {
		delete(s.versions, key)
		return
	}
	s.remember(key, rv)
}

func (s *Stream) remember(key ObjectKey, rv string) {
	if s.versions == nil {
		s.versions = map[ObjectKey]string{}
	}
	s.versions[key] = rv
}

// precedes reports whether last can be the version before rv: a different
// one, and an older one where both are numbers (a version the stream
// holds from a list taken after the event is not what it was made
// against).
func precedes(last, rv string) bool {
	if last == "" || last == rv {
		return false
	}
	l, okL := parseVersion(last)
	r, okR := parseVersion(rv)
	return !okL || !okR || l < r
}
