package watch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// startStream runs a stream on ns and returns its events as they arrive.
func startStream(t *testing.T, ns string) <-chan watch.Event {
	t.Helper()
	return startStreamFrom(t, ns, nil, nil)
}

func next(t *testing.T, events <-chan watch.Event) watch.Event {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no watch event within 10s")
		return watch.Event{}
	}
}

func createNamespace(t *testing.T, name string, configMaps ...string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, kube.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	for _, cm := range configMaps {
		require.NoError(t, kube.Client().Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: cm},
			Data:       map[string]string{"key": cm},
		}))
	}
}

func TestStreamReplaysThenSyncsThenFollowsLiveEvents(t *testing.T) {
	createNamespace(t, "replay", "a", "b", "c")
	events := startStream(t, "replay")

	require.Equal(t, watch.ReplayStart, next(t, events).Kind)
	var replayed []string
	for range 3 {
		ev := next(t, events)
		require.Equal(t, watch.Upsert, ev.Kind)
		require.True(t, ev.Replay)
		replayed = append(replayed, ev.Object.GetName())
	}
	require.ElementsMatch(t, []string{"a", "b", "c"}, replayed)
	synced := next(t, events)
	require.Equal(t, watch.Synced, synced.Kind, "the initial-events-end bookmark ends the replay")
	require.ElementsMatch(t, []watch.ObjectKey{{"replay", "a"}, {"replay", "b"}, {"replay", "c"}}, synced.Present)

	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "replay", Name: "d"}, Data: map[string]string{"k": "1"}}
	require.NoError(t, kube.Client().Create(ctx, cm))
	ev := next(t, events)
	require.Equal(t, watch.Upsert, ev.Kind)
	require.False(t, ev.Replay)
	require.Equal(t, "d", ev.Object.GetName())

	cm.Data["k"] = "2"
	require.NoError(t, kube.Client().Update(ctx, cm))
	ev = next(t, events)
	require.Equal(t, watch.Upsert, ev.Kind)
	require.Equal(t, map[string]any{"k": "2"}, ev.Object.Object["data"])

	require.NoError(t, kube.Client().Delete(ctx, cm))
	ev = next(t, events)
	require.Equal(t, watch.Delete, ev.Kind)
	require.Equal(t, "d", ev.Object.GetName())
}

func TestStreamOnAnEmptyScopeSyncsWithNothingPresent(t *testing.T) {
	createNamespace(t, "empty")
	events := startStream(t, "empty")
	require.Equal(t, watch.ReplayStart, next(t, events).Kind)
	ev := next(t, events)
	require.Equal(t, watch.Synced, ev.Kind)
	require.Empty(t, ev.Present, "an empty replay still ends with Synced, so a sweep can delete everything")
}
