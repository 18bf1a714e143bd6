package watch_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

// TestASlowPrepareOfOneObjectDoesNotHoldBackAnother: object a's first live
// change waits in Prepare (an author that takes its time); b's change,
// made after it, is handled meanwhile. a's two changes are handled in
// their order once a's wait ends, and the cursor never passes a's change
// while it waits.
func TestASlowPrepareOfOneObjectDoesNotHoldBackAnother(t *testing.T) {
	createNamespace(t, "lanes", "a", "b")
	client, err := dynamic.NewForConfig(kube.Config())
	require.NoError(t, err)
	release := make(chan struct{})
	events := make(chan watch.Event, 100)
	cur := &cursor{}
	stream := &watch.Stream{Client: client, Scope: watch.Scope{GVR: configMaps, Namespace: "lanes"}, Log: testr.New(t), Cursor: cur,
		Prepare: func(ctx context.Context, ev watch.Event) any {
			data := ev.Object.Object["data"].(map[string]any)
			if ev.Object.GetName() == "a" && data["key"] == "a1" {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return data["key"]
		},
		Handler: func(ctx context.Context, ev watch.Event) error { events <- ev; return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.Equal(t, watch.ReplayStart, next(t, events).Kind)
	next(t, events)
	next(t, events)
	require.Equal(t, watch.Synced, next(t, events).Kind)

	setKey(t, "lanes", "a", "a1") // waits in Prepare
	setKey(t, "lanes", "a", "a2") // queued behind a1
	bVersion := setKey(t, "lanes", "b", "b1")

	ev := next(t, events)
	require.Equal(t, "b1", ev.Prepared, "b is handled while a's first change still waits")
	cur.mu.Lock()
	require.NotContains(t, cur.advanced, bVersion, "the cursor does not pass a's change while it waits")
	cur.mu.Unlock()

	close(release)
	require.Equal(t, "a1", next(t, events).Prepared)
	require.Equal(t, "a2", next(t, events).Prepared, "an object's changes keep their order")
	require.Eventually(t, func() bool {
		cur.mu.Lock()
		defer cur.mu.Unlock()
		return len(cur.advanced) > 0 && cur.advanced[len(cur.advanced)-1] == bVersion
	}, 10*time.Second, time.Millisecond, "once a's changes are handled the cursor moves past b's")
}

// setKey writes value under "key" in ConfigMap ns/name and returns the
// resourceVersion of the write.
func setKey(t *testing.T, ns, name, value string) string {
	t.Helper()
	var cm corev1.ConfigMap
	require.NoError(t, kube.Client().Get(context.Background(), keyOf(ns, name), &cm))
	cm.Data = map[string]string{"key": value}
	require.NoError(t, kube.Client().Update(context.Background(), &cm))
	return cm.ResourceVersion
}
