package watch

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiwatch "k8s.io/apimachinery/pkg/watch"
)

// catchUp judges the events a watch resumed from a stored cursor
// re-delivers. The cursor lags Git (it is stored a while after what it
// names is committed), so the watch first replays history Git may already
// be past: handed on, an object's older states would be committed again,
// and deleted objects re-created, until the catch-up's end restored them.
// A list taken when the stream resumes says where each object stands; an
// event older than that is superseded and dropped, so only each object's
// state at the list, or its removal, is handed on, never one older than
// Git.
type catchUp struct {
	// upTo is the list's resourceVersion: events after it are live.
	upTo uint64
	// versions are the listed objects' resourceVersions.
	versions map[ObjectKey]uint64
	// dropped counts the superseded events, for the log.
	dropped int
}

// listCatchUp lists the scope for a resumed watch's catch-up: only the
// objects' metadata when the stream has a metadata client (a resume then
// reads a few hundred bytes an object, not the objects). It returns nil
// when resourceVersions are not numbers (an aggregated API may use
// others): the events are then handed on as they come.
func (s *Stream) listCatchUp(ctx context.Context) (*catchUp, error) {
	c := &catchUp{versions: map[ObjectKey]uint64{}}
	numeric := true
	listRV, err := s.listVersions(ctx, func(namespace, name, resourceVersion string) {
		if s.TrackPrevious {
			// Where the object stands is the version its next write is
			// made against.
			s.remember(ObjectKey{namespace, name}, resourceVersion)
		}
		rv, ok := parseVersion(resourceVersion)
		numeric = numeric && ok
		c.versions[ObjectKey{namespace, name}] = rv
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s to catch up from its cursor: %w", s.Scope, err)
	}
	s.versionsUnknown = false
	upTo, ok := parseVersion(listRV)
	if !numeric || !ok {
		return nil, nil
	}
	c.upTo = upTo
	return c, nil
}

// listVersions pages through the scope, calling each with every object's
// namespace, name and resourceVersion, and returns the list's
// resourceVersion.
func (s *Stream) listVersions(ctx context.Context, each func(namespace, name, resourceVersion string)) (string, error) {
	opts := metav1.ListOptions{Limit: 500}
	for {
		var items []metav1.Object
		var meta metav1.ListInterface
		if s.Metadata != nil {
			list, err := s.metadataResource().List(ctx, opts)
			if err != nil {
				return "", err
			}
			for i := range list.Items {
				items = append(items, &list.Items[i])
			}
			meta = list
		} else {
			list, err := s.resource().List(ctx, opts)
			if err != nil {
				return "", err
			}
			for i := range list.Items {
				items = append(items, &list.Items[i])
			}
			meta = list
		}
		for _, o := range items {
			each(o.GetNamespace(), o.GetName(), o.GetResourceVersion())
		}
		if opts.Continue = meta.GetContinue(); opts.Continue == "" {
			return meta.GetResourceVersion(), nil
		}
	}
}

// superseded reports whether a re-delivered event is older than its
// object's state at the list: an earlier version of a listed object, or
// anything but the removal of an object the list no longer has.
func (c *catchUp) superseded(typ apiwatch.EventType, obj *unstructured.Unstructured) bool {
	rv, ok := parseVersion(obj.GetResourceVersion())
	if !ok || rv > c.upTo {
		return false
	}
	listed, present := c.versions[ObjectKey{obj.GetNamespace(), obj.GetName()}]
	if (!present && typ != apiwatch.Deleted) || (present && rv < listed) {
		c.dropped++
		return true
	}
	return false
}

// startCatchUp lists where the objects of a resumed watch stand, at its
// first event. Without a list to judge by (resourceVersions that are not
// numbers) the events are handed on as they come and the catch-up is over
// at once.
func (s *Stream) startCatchUp(ctx context.Context) error {
	c, err := s.listCatchUp(ctx)
	if err != nil {
		return err
	}
	s.catchingUp, s.catchUp = false, c
	if c == nil {
		return s.caughtUp(ctx)
	}
	return nil
}

// quietShortWatch ends a catch-up's short watches when one closed without
// sending anything, not even a bookmark: the watch cache sends none at or
// below the versions the watch has passed, and its version moves only with
// the resource's own events (or a consistent list), so in a resource quiet
// since the watch opened more short watches would hear nothing either. The watches are long again; the
// catch-up ends at the resource's next event or bookmark, and the worker's
// replaySilence closes a window held for it meanwhile. Listing to move the
// cache would end it, but would make every quiet restart list its scopes.
func (s *Stream) quietShortWatch(sentNothing bool) {
	if sentNothing && s.catchingUp && s.shortWatches > 0 {
		s.shortWatches = maxShortWatches
	}
}

// catchUpWatchSeconds is the timeout of a resumed stream's watches until
// it has caught up. Only a bookmark at or past the catch-up's list tells a
// quiet scope's watch it has passed the list (the list answers with etcd's
// revision, which other resources move: in a cluster the Leases do every
// few seconds), and the API server's watch cache sends a watch bookmarks
// about once a minute, and once about 2 s before its timeout (k8s.io/
// apiserver cacher, cacheWatcher.nextBookmarkTime). 3 s is the shortest
// timeout that still gets that one: the cache dispatches bookmarks on a
// timer of about 1 s, in 1 s buckets, so it comes 0 to about 2.3 s after
// the watch opened, at the watch cache's revision, which a list served
// from it (a consistent list, ConsistentListFromCache) has already brought
// up to the list's. Without it the branch worker holds the catch-up's
// window for replaySilence (5 s).
const catchUpWatchSeconds int64 = 3

// maxShortWatches bounds a catch-up's short watches. An API server that
// answers the list from etcd rather than from its watch cache can send
// bookmarks behind the list until the resource changes somewhere; past
// these, the watches are long again, as on any other reconnect, and the
// catch-up ends at the periodic bookmark or the next event (the worker's
// replaySilence closes the held window meanwhile).
const maxShortWatches = 3

// catchUpTimeout is the timeout of the next watch: catchUpWatchSeconds
// while the stream is catching up and has short watches left; nil (the
// API server's default) otherwise.
func (s *Stream) catchUpTimeout() *int64 {
	if (!s.catchingUp && s.catchUp == nil) || s.shortWatches >= maxShortWatches {
		return nil
	}
	s.shortWatches++
	seconds := catchUpWatchSeconds
	return &seconds
}

// reopenAfterList reports, once after the catch-up's list was taken,
// whether the watch should be reopened from where it is: its bookmark may
// be due before the list, and only one sent after it is sure to reach it.
// A catch-up that ended at the event at hand needs none.
func (s *Stream) reopenAfterList() bool {
	reopen := s.reopen && s.catchUp != nil
	s.reopen = false
	return reopen
}

// judge reports whether a live event is a superseded re-delivery; one of
// a resumed watch's first events lists where its objects stand. An event
// past the list ends the catch-up before it is handed on; a superseded one
// only moves the cursor, since Git is past it.
func (s *Stream) judge(ctx context.Context, typ apiwatch.EventType, obj *unstructured.Unstructured) (bool, error) {
	if s.catchingUp {
		if err := s.startCatchUp(ctx); err != nil {
			return false, err
		}
		s.reopen = s.catchUp != nil && s.shortWatches < maxShortWatches
	}
	if s.catchUp == nil {
		return false, nil
	}
	if s.catchUp.superseded(typ, obj) {
		s.advance(obj.GetResourceVersion())
		return true, nil
	}
	if rv, ok := parseVersion(obj.GetResourceVersion()); ok && rv > s.catchUp.upTo {
		return false, s.endCatchUp(ctx, obj.GetResourceVersion())
	}
	return false, nil
}

// endCatchUp forgets the list once the watch has reached it (a bookmark or
// an event at or past its version), and says so to the handler.
func (s *Stream) endCatchUp(ctx context.Context, resourceVersion string) error {
	if s.catchUp == nil || !s.catchUp.over(resourceVersion) {
		return nil
	}
	s.Log.V(1).Info("caught up from the resume cursor", "scope", s.Scope.String(), "superseded", s.catchUp.dropped)
	s.catchUp = nil
	return s.caughtUp(ctx)
}

// caughtUp tells the handler, after every catch-up event before it, that
// the catch-up is over.
func (s *Stream) caughtUp(ctx context.Context) error {
	return s.deliver(ctx, Event{Kind: CaughtUp, Scope: s.Scope, Received: s.Clock.Now()})
}

// over reports whether the watch has reached the list: nothing it sends
// after this version is re-delivered.
func (c *catchUp) over(resourceVersion string) bool {
	rv, ok := parseVersion(resourceVersion)
	return ok && rv >= c.upTo
}

func parseVersion(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// listPrevious lists where the scope's objects stand, for a tracking
// stream whose catch-up a bookmark ended before any event: the versions
// the next writes are made against. The list comes after the event at
// hand, so it may hold versions newer than events still to come; those
// events keep no previous version (precedes) and are remembered in turn.
func (s *Stream) listPrevious(ctx context.Context) error {
	if _, err := s.listVersions(ctx, func(namespace, name, resourceVersion string) {
		if _, seen := s.versions[ObjectKey{namespace, name}]; !seen {
			s.remember(ObjectKey{namespace, name}, resourceVersion)
		}
	}); err != nil {
		return fmt.Errorf("listing %s for the versions its objects stand at: %w", s.Scope, err)
	}
	s.versionsUnknown = false
	return nil
}
