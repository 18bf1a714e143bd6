package watch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

// startTrackingStream runs a stream on ns that tracks each object's
// previous version, from cur (nil: a replay).
func startTrackingStream(t *testing.T, ns string, cur watch.Cursor) <-chan watch.Event {
	t.Helper()
	return startStreamWith(t, ns, cur, nil, nil, func(s *watch.Stream) { s.TrackPrevious = true })
}

// The version a write was made against is the one the stream saw last: the
// replay's, the live create's, the previous update's; a create has none, a
// re-creation after a delete neither.
func TestAnEventCarriesTheVersionOfTheObjectsPreviousEvent(t *testing.T) {
	createNamespace(t, "previous", "a")
	replayedA := resourceVersionOf(t, "previous", "a")
	events := startTrackingStream(t, "previous", nil)
	require.Equal(t, watch.ReplayStart, next(t, events).Kind)
	ev := next(t, events)
	require.True(t, ev.Replay)
	require.Empty(t, ev.PreviousVersion)
	require.Equal(t, watch.Synced, next(t, events).Kind)

	setKey(t, "previous", "a", "a1")
	ev = next(t, events)
	require.Equal(t, replayedA, ev.PreviousVersion, "the replay's version is what the first live write was made against")

	ctx := context.Background()
	d := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "previous", Name: "d"}}
	require.NoError(t, kube.Client().Create(ctx, d))
	created := next(t, events)
	require.Equal(t, "d", created.Object.GetName())
	require.Empty(t, created.PreviousVersion, "a create has no previous version")

	setKey(t, "previous", "d", "d1")
	updated := next(t, events)
	require.Equal(t, created.Object.GetResourceVersion(), updated.PreviousVersion)

	require.NoError(t, kube.Client().Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "previous", Name: "d"}}))
	removed := next(t, events)
	require.Equal(t, watch.Delete, removed.Kind)
	require.Equal(t, updated.Object.GetResourceVersion(), removed.PreviousVersion)

	require.NoError(t, kube.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "previous", Name: "d"}}))
	require.Empty(t, next(t, events).PreviousVersion, "a re-creation starts afresh")
}

// After a restart from a stored cursor the catch-up's list says where each
// object stood: a live write after it was made against the listed version.
func TestAResumedStreamKnowsTheListedVersionOfItsObjects(t *testing.T) {
	createNamespace(t, "previous-resume", "a", "b")
	cursorAtB := resourceVersionOf(t, "previous-resume", "b")
	setKey(t, "previous-resume", "a", "a1")
	listedA := resourceVersionOf(t, "previous-resume", "a")

	events := startTrackingStream(t, "previous-resume", &cursor{stored: cursorAtB})
	require.Equal(t, watch.Resumed, next(t, events).Kind)
	redelivered := nextObjectEvent(t, events)
	require.Equal(t, listedA, redelivered.Object.GetResourceVersion())
	require.Empty(t, redelivered.PreviousVersion, "what came before the re-delivered version is not known")

	setKey(t, "previous-resume", "b", "b1")
	ev := nextObjectEvent(t, events)
	require.Equal(t, "b", ev.Object.GetName())
	require.NotEmpty(t, ev.PreviousVersion)
	require.Equal(t, cursorAtB, ev.PreviousVersion, "b was listed at its create's version")
}

// A resumed watch whose first message is a bookmark has nothing to catch
// up, yet a tracking stream still needs where its objects stand: its first
// event lists them. Scripted: the API server decides when it sends a
// bookmark.
func TestAResumedStreamWhoseFirstMessageIsABookmarkListsItsObjectsVersions(t *testing.T) {
	client := newFakeClient()
	require.NoError(t, client.Tracker().Add(object("a", "14")))
	require.NoError(t, client.Tracker().Add(object("b", "17")))
	sc := &script{watches: [][]apiwatch.Event{{
		{Type: apiwatch.Bookmark, Object: object("", "15")},
		{Type: apiwatch.Modified, Object: object("a", "16")},
		{Type: apiwatch.Modified, Object: object("b", "17")},
	}}}
	client.PrependWatchReactor("configmaps", sc.reactor)
	got := runStream(t, client, &cursor{stored: "10"}, &counter{}, 4, func(s *watch.Stream) { s.TrackPrevious = true })
	require.Equal(t, []watch.EventKind{watch.Resumed, watch.CaughtUp, watch.Upsert, watch.Upsert}, kinds(got))
	require.Equal(t, "14", got[2].PreviousVersion, "a was made against the version the list found")
	require.Empty(t, got[3].PreviousVersion, "b's listed version is the event's own: what came before is not known")
}

// nextObjectEvent is the next Upsert or Delete, past the CaughtUp that
// ends a resumed watch's catch-up wherever the watch reaches its list.
func nextObjectEvent(t *testing.T, events <-chan watch.Event) watch.Event {
	t.Helper()
	for {
		if ev := next(t, events); ev.Kind != watch.CaughtUp {
			return ev
		}
	}
}
