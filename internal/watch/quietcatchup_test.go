package watch_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	clienttesting "k8s.io/client-go/testing"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

// moveTheRevision writes an object of another resource (a namespace), so
// etcd's revision, which a consistent list answers with, moves past every
// ConfigMap event without a ConfigMap changing. In a cluster the Leases do
// this all the time.
func moveTheRevision(t *testing.T, name string) {
	t.Helper()
	require.NoError(t, kube.Client().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

// TestAResumedWatchCatchesUpWithoutALaterChangeInItsScope: against the
// real API server, a resumed stream whose catch-up list answers with a
// revision past its last re-delivered event (another resource was
// written since) says CaughtUp with no later change in its scope. Only a
// bookmark can tell it the watch has passed the list; the API server's
// watch cache sends one about once a minute, and about 2 s before a
// watch's timeout, which the stream's catch-up watches set short. The
// list, a consistent read served from the cache, has brought the cache up
// to its revision, so that bookmark reaches it. next's patience (10 s) is
// well below the minute. (A resumed stream with nothing to re-deliver, in
// a resource quiet since the watch opened, gets no bookmark at all: the
// cache sends none at or below the versions the watch has passed. Its
// catch-up ends at the resource's next change, as before.)
func TestAResumedWatchCatchesUpWithoutALaterChangeInItsScope(t *testing.T) {
	meta, err := metadata.NewForConfig(kube.Config())
	require.NoError(t, err)

	t.Run("a re-delivered change, then nothing in the scope", func(t *testing.T) {
		const ns = "quiet-catchup"
		createNamespace(t, ns, "a")
		cursorAtA := resourceVersionOf(t, ns, "a")
		setKey(t, ns, "a", "a1")
		moveTheRevision(t, ns+"-elsewhere")

		events := startStreamWith(t, ns, &cursor{stored: cursorAtA}, nil, meta)
		require.Equal(t, watch.Resumed, next(t, events).Kind)
		ev := next(t, events)
		require.True(t, ev.CatchUp, describe(ev))
		require.Equal(t, "upsert a a1", describe(ev))
		require.Equal(t, watch.CaughtUp, next(t, events).Kind, "the watch passed the list without another change")
	})
}

// The request side of the above, scripted (the proof is the real API
// server's): a catching-up stream's watches ask for a short timeout, the
// one open when the catch-up's list is taken is reopened from where it is
// (its bookmark may be due before the list), and once caught up the
// watches are the API server's default length again.
func TestACatchingUpStreamsWatchesAreShortUntilItCaughtUp(t *testing.T) {
	client := newFakeClient()
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		list := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{*object("a", "12")}}
		list.SetResourceVersion("20") // Leases moved etcd's revision past a's change
		return true, list, nil
	})
	sc := &script{watches: [][]apiwatch.Event{
		{{Type: apiwatch.Modified, Object: object("a", "12")}},
		{{Type: apiwatch.Bookmark, Object: object("", "20")}},
		{{Type: apiwatch.Modified, Object: object("b", "21")}},
	}}
	client.PrependWatchReactor("configmaps", sc.reactor)
	got := runStream(t, client, &cursor{stored: "10"}, &counter{}, 4)
	require.Equal(t, []watch.EventKind{watch.Resumed, watch.Upsert, watch.CaughtUp, watch.Upsert}, kinds(got))
	require.True(t, got[1].CatchUp)
	require.False(t, got[3].CatchUp)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	require.GreaterOrEqual(t, len(sc.opts), 3)
	var opened []string
	for _, o := range sc.opts[:3] {
		timeout := "default"
		if o.TimeoutSeconds != nil {
			timeout = strconv.FormatInt(*o.TimeoutSeconds, 10) + "s"
		}
		opened = append(opened, "from "+o.ResourceVersion+", "+timeout)
	}
	require.Equal(t, []string{"from 10, 3s", "from 12, 3s", "from 20, default"}, opened)
}

// A short watch that closed without sending anything, not even a
// bookmark, says the watch cache's version is not moving: the stream's
// next watches are the default length, not more short ones. Scripted.
func TestAQuietCatchUpStopsAskingForShortWatches(t *testing.T) {
	client := newFakeClient()
	sc := &script{watches: [][]apiwatch.Event{
		{}, // closed at its timeout, having sent nothing
		{{Type: apiwatch.Bookmark, Object: object("", "20")}},
	}}
	client.PrependWatchReactor("configmaps", sc.reactor)
	got := runStream(t, client, &cursor{stored: "10"}, &counter{}, 2)
	require.Equal(t, []watch.EventKind{watch.Resumed, watch.CaughtUp}, kinds(got))
	sc.mu.Lock()
	defer sc.mu.Unlock()
	require.GreaterOrEqual(t, len(sc.opts), 2)
	require.Equal(t, int64(3), *sc.opts[0].TimeoutSeconds)
	require.Nil(t, sc.opts[1].TimeoutSeconds, "no bookmark came: another short watch would hear none either")
}
