package watch_test

import (
	"context"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

// startStreamFrom runs a stream on ns that starts from cur.
func startStreamFrom(t *testing.T, ns string, cur watch.Cursor, obs watch.Observer) <-chan watch.Event {
	t.Helper()
	return startStreamWith(t, ns, cur, obs, nil)
}

// startStreamWith is startStreamFrom with a metadata client for the
// catch-up's list (nil: the list reads the objects); configure, if any,
// sets more of the stream before it runs.
func startStreamWith(t *testing.T, ns string, cur watch.Cursor, obs watch.Observer, meta metadata.Interface,
	configure ...func(*watch.Stream)) <-chan watch.Event {
	t.Helper()
	client, err := watch.NewDynamicClient(kube.Config()) // the operator's client
	require.NoError(t, err)
	events := make(chan watch.Event, 100)
	ctx, cancel := context.WithCancel(context.Background())
	stream := &watch.Stream{Client: client, Metadata: meta, Scope: watch.Scope{GVR: configMaps, Namespace: ns}, Log: testr.New(t),
		Cursor: cur, Observer: obs, Handler: func(ctx context.Context, ev watch.Event) error { events <- ev; return nil }}
	for _, c := range configure {
		c(stream)
	}
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return events
}

func resourceVersionOf(t *testing.T, ns, name string) string {
	t.Helper()
	var cm corev1.ConfigMap
	require.NoError(t, kube.Client().Get(context.Background(), keyOf(ns, name), &cm))
	return cm.ResourceVersion
}

func TestARealAPIServerResumesFromACursorAndReplaysOnceItIsCompactedAway(t *testing.T) {
	createNamespace(t, "resume", "a")
	cursorAtA := resourceVersionOf(t, "resume", "a")
	require.NoError(t, kube.Client().Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "resume", Name: "b"}, Data: map[string]string{"key": "b"}}))

	t.Run("resumed: only what happened after the cursor", func(t *testing.T) {
		obs := &counter{}
		events := startStreamFrom(t, "resume", &cursor{stored: cursorAtA}, obs)
		require.Equal(t, watch.Resumed, next(t, events).Kind)
		ev := next(t, events)
		require.Equal(t, watch.Upsert, ev.Kind)
		require.False(t, ev.Replay)
		require.Equal(t, "b", ev.Object.GetName(), "a, from before the cursor, is not reported again")
		require.True(t, ev.CatchUp, "re-delivered from before the stream resumed")
	})

	_, err := kube.CompactEtcd(context.Background())
	require.NoError(t, err)

	t.Run("compacted away: a replay", func(t *testing.T) {
		obs := &counter{}
		events := startStreamFrom(t, "resume", &cursor{stored: cursorAtA}, obs)
		require.Equal(t, watch.Resumed, next(t, events).Kind)
		require.Equal(t, watch.ReplayStart, next(t, events).Kind)
		var replayed []string
		for range 2 {
			ev := next(t, events)
			require.True(t, ev.Replay)
			replayed = append(replayed, ev.Object.GetName())
		}
		require.ElementsMatch(t, []string{"a", "b"}, replayed)
		require.Equal(t, watch.Synced, next(t, events).Kind)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		require.Equal(t, []string{watch.ColdExpired}, obs.cold)
	})
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// TestAResumedWatchHandsOnNothingOlderThanWhereItsObjectsStand: the stored
// cursor lags, so the resumed watch re-delivers a's two changes, c's
// create and delete, d's create and b's delete. Only what each object is
// now is handed on: a's last change, d, and c's and b's removals; a's
// first change and c's create are older than that and never reach Git
// again. They are marked CatchUp; CaughtUp follows once the watch passes
// where the objects stood, before the live change after the catch-up,
// which is handed on as usual. The catch-up's list reads the objects, or
// only their metadata where the stream has a metadata client (the
// operator's case): the same events.
func TestAResumedWatchHandsOnNothingOlderThanWhereItsObjectsStand(t *testing.T) {
	meta, err := metadata.NewForConfig(kube.Config())
	require.NoError(t, err)
	for ns, client := range map[string]metadata.Interface{"catchup": nil, "catchup-meta": meta} {
		t.Run(ns, func(t *testing.T) {
			createNamespace(t, ns, "a", "b")
			cursorAtB := resourceVersionOf(t, ns, "b")
			ctx := context.Background()
			setKey(t, ns, "a", "a1")
			setKey(t, ns, "a", "a2")
			c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
			require.NoError(t, kube.Client().Create(ctx, c))
			require.NoError(t, kube.Client().Delete(ctx, c))
			require.NoError(t, kube.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}}))
			require.NoError(t, kube.Client().Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}}))

			events := startStreamWith(t, ns, &cursor{stored: cursorAtB}, nil, client)
			require.Equal(t, watch.Resumed, next(t, events).Kind)
			var got []string
			for range 4 {
				ev := next(t, events)
				require.True(t, ev.CatchUp, describe(ev))
				got = append(got, describe(ev))
			}
			setKey(t, ns, "a", "a3")
			require.Equal(t, watch.CaughtUp, next(t, events).Kind, "the watch passed the list")
			live := next(t, events)
			require.False(t, live.CatchUp)
			got = append(got, describe(live))
			require.Equal(t, []string{"upsert a a2", "delete c", "upsert d", "delete b", "upsert a a3"}, got)
		})
	}
}

// describe names an object event and the value under "key", if any.
func describe(ev watch.Event) string {
	kind := map[watch.EventKind]string{watch.Upsert: "upsert", watch.Delete: "delete"}[ev.Kind]
	out := kind + " " + ev.Object.GetName()
	if data, ok := ev.Object.Object["data"].(map[string]any); ok && ev.Kind == watch.Upsert && data["key"] != nil {
		out += " " + data["key"].(string)
	}
	return out
}
