package watch_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

// These tests script the API server's answers with client-go's fake
// dynamic client: 410 Gone, a refused streaming list and a closed watch
// cannot be provoked on demand from a real one.

func object(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

func endOfReplay(rv string) *unstructured.Unstructured {
	u := object("", rv)
	u.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return u
}

// script answers successive watch calls with the given event lists; each
// watch closes after its events unless hold is set for it.
type script struct {
	mu      sync.Mutex
	watches [][]apiwatch.Event
	opts    []metav1.ListOptions
}

func (s *script) reactor(action clienttesting.Action) (bool, apiwatch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, action.(clienttesting.WatchActionImpl).ListOptions)
	if len(s.watches) == 0 {
		return true, apiwatch.NewFake(), nil // stays open, silent
	}
	events := s.watches[0]
	s.watches = s.watches[1:]
	w := apiwatch.NewFakeWithChanSize(len(events), false)
	for _, ev := range events {
		w.Action(ev.Type, ev.Object)
	}
	w.Stop()
	return true, w, nil
}

type counter struct {
	mu                        sync.Mutex
	replays, reconnects, gone int
	resumes                   int
	cold                      []string
}

func (c *counter) Event(watch.Scope, apiwatch.EventType) {}
func (c *counter) Replay(watch.Scope)                    { c.mu.Lock(); c.replays++; c.mu.Unlock() }
func (c *counter) Reconnect(watch.Scope)                 { c.mu.Lock(); c.reconnects++; c.mu.Unlock() }
func (c *counter) Gone(watch.Scope)                      { c.mu.Lock(); c.gone++; c.mu.Unlock() }
func (c *counter) Resumed(watch.Scope)                   { c.mu.Lock(); c.resumes++; c.mu.Unlock() }
func (c *counter) ColdReplay(_ watch.Scope, reason string) {
	c.mu.Lock()
	c.cold = append(c.cold, reason)
	c.mu.Unlock()
}

func runScripted(t *testing.T, client *dynamicfake.FakeDynamicClient, obs watch.Observer, want int) []watch.Event {
	t.Helper()
	return runStream(t, client, nil, obs, want)
}

// runStream runs a stream (from cur, when set) until it reported want
// events; configure, if any, sets more of the stream before it runs.
func runStream(t *testing.T, client *dynamicfake.FakeDynamicClient, cur watch.Cursor, obs watch.Observer, want int,
	configure ...func(*watch.Stream)) []watch.Event {
	t.Helper()
	events := make(chan watch.Event, 64)
	ctx, cancel := context.WithCancel(context.Background())
	s := &watch.Stream{Client: client, Scope: watch.Scope{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "ns"},
		Log: testr.New(t), Observer: obs, MinBackoff: time.Millisecond, Cursor: cur,
		Handler: func(_ context.Context, ev watch.Event) error { events <- ev; return nil }}
	for _, c := range configure {
		c(s)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	var got []watch.Event
	for len(got) < want {
		select {
		case ev := <-events:
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			require.FailNowf(t, "too few events", "got %d of %d", len(got), want)
		}
	}
	cancel()
	<-done
	return got
}

func kinds(events []watch.Event) []watch.EventKind {
	var out []watch.EventKind
	for _, ev := range events {
		out = append(out, ev.Kind)
	}
	return out
}

func newFakeClient() *dynamicfake.FakeDynamicClient {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"})
}

func TestA410GoneStartsAFreshReplay(t *testing.T) {
	client := newFakeClient()
	sc := &script{watches: [][]apiwatch.Event{
		{{Type: apiwatch.Added, Object: object("a", "5")}, {Type: apiwatch.Bookmark, Object: endOfReplay("5")},
			{Type: apiwatch.Error, Object: &apierrors.NewResourceExpired("too old resource version").ErrStatus}},
		{{Type: apiwatch.Added, Object: object("a", "9")}, {Type: apiwatch.Bookmark, Object: endOfReplay("9")}},
	}}
	client.PrependWatchReactor("configmaps", sc.reactor)
	obs := &counter{}
	got := runScripted(t, client, obs, 6)
	require.Equal(t, []watch.EventKind{watch.ReplayStart, watch.Upsert, watch.Synced, watch.ReplayStart, watch.Upsert, watch.Synced}, kinds(got))
	require.Equal(t, 1, obs.gone)
	require.Equal(t, 2, obs.replays)
	require.True(t, *sc.opts[1].SendInitialEvents, "the rebuild is a sendInitialEvents replay")
}

func TestAClosedWatchResumesFromItsResourceVersionWithoutAReplay(t *testing.T) {
	client := newFakeClient()
	sc := &script{watches: [][]apiwatch.Event{
		{{Type: apiwatch.Bookmark, Object: endOfReplay("7")}},
		{{Type: apiwatch.Modified, Object: object("a", "8")}},
	}}
	client.PrependWatchReactor("configmaps", sc.reactor)
	obs := &counter{}
	got := runScripted(t, client, obs, 3)
	require.Equal(t, []watch.EventKind{watch.ReplayStart, watch.Synced, watch.Upsert}, kinds(got))
	require.Equal(t, "7", sc.opts[1].ResourceVersion, "resumed from the last bookmark")
	require.Nil(t, sc.opts[1].SendInitialEvents)
	require.Equal(t, 1, obs.replays)
}

func TestAClosedReplayStartsOver(t *testing.T) {
	client := newFakeClient()
	sc := &script{watches: [][]apiwatch.Event{
		{{Type: apiwatch.Added, Object: object("a", "3")}}, // closed before initial-events-end
		{{Type: apiwatch.Added, Object: object("a", "4")}, {Type: apiwatch.Bookmark, Object: endOfReplay("4")}},
	}}
	client.PrependWatchReactor("configmaps", sc.reactor)
	got := runScripted(t, client, &counter{}, 5)
	require.Equal(t, []watch.EventKind{watch.ReplayStart, watch.Upsert, watch.ReplayStart, watch.Upsert, watch.Synced}, kinds(got))
}

func TestARefusedStreamingListFallsBackToListThenWatch(t *testing.T) {
	client := newFakeClient()
	calls := 0
	client.PrependWatchReactor("configmaps", func(action clienttesting.Action) (bool, apiwatch.Interface, error) {
		calls++
		opts := action.(clienttesting.WatchActionImpl).ListOptions
		if opts.SendInitialEvents != nil {
			return true, nil, apierrors.NewBadRequest("sendInitialEvents is not supported")
		}
		require.Equal(t, "42", opts.ResourceVersion, "the watch continues from the list")
		return true, apiwatch.NewFake(), nil
	})
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		list := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{*object("a", "40"), *object("b", "41")}}
		list.SetResourceVersion("42")
		return true, list, nil
	})
	got := runScripted(t, client, &counter{}, 4)
	require.Equal(t, []watch.EventKind{watch.ReplayStart, watch.Upsert, watch.Upsert, watch.Synced}, kinds(got))
	require.ElementsMatch(t, []watch.ObjectKey{{"ns", "a"}, {"ns", "b"}}, got[3].Present)
}

// cursor is a stored resume point for the scripted streams.
type cursor struct {
	mu       sync.Mutex
	stored   string
	err      error
	advanced []string
}

func (c *cursor) Load(context.Context) (string, error) { return c.stored, c.err }
func (c *cursor) Advance(rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanced = append(c.advanced, rv)
}

func runWithCursor(t *testing.T, sc *script, cur *cursor, obs watch.Observer, want int) []watch.Event {
	t.Helper()
	client := newFakeClient()
	client.PrependWatchReactor("configmaps", sc.reactor)
	return runStream(t, client, cur, obs, want)
}

// The event after the bookmark is the sentinel: the stream is stopped once
// it is handled, and the bookmark before it has moved the cursor by then.
func TestAStoredCursorResumesAWatchWithoutAReplay(t *testing.T) {
	sc := &script{watches: [][]apiwatch.Event{
		{{Type: apiwatch.Modified, Object: object("a", "12")}, {Type: apiwatch.Bookmark, Object: object("", "15")},
			{Type: apiwatch.Modified, Object: object("b", "16")}},
	}}
	cur, obs := &cursor{stored: "10"}, &counter{}
	got := runWithCursor(t, sc, cur, obs, 4)
	// The fake's list has no resourceVersion to judge the catch-up by: it
	// is over at the first event, which is then handed on as live.
	require.Equal(t, []watch.EventKind{watch.Resumed, watch.CaughtUp, watch.Upsert, watch.Upsert}, kinds(got))
	require.False(t, got[2].Replay)
	require.False(t, got[2].CatchUp)
	require.Equal(t, "10", sc.opts[0].ResourceVersion, "opened from the cursor")
	require.Nil(t, sc.opts[0].SendInitialEvents)
	require.Equal(t, 1, obs.resumes)
	require.Zero(t, obs.replays)
	cur.mu.Lock()
	defer cur.mu.Unlock()
	require.GreaterOrEqual(t, len(cur.advanced), 2)
	require.Equal(t, []string{"12", "15"}, cur.advanced[:2], "the live event and the bookmark move the cursor")
}

func TestACursorTheAPIServerNoLongerHasReplaysAndSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer *metav1.Status
		reason string
	}{
		{"too old resource version", &apierrors.NewResourceExpired("too old resource version: 10 (30)").ErrStatus, watch.ColdExpired},
		{"gone", &apierrors.NewGone("gone").ErrStatus, watch.ColdGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &script{watches: [][]apiwatch.Event{
				{{Type: apiwatch.Error, Object: tc.answer}},
				{{Type: apiwatch.Added, Object: object("a", "31")}, {Type: apiwatch.Bookmark, Object: endOfReplay("32")}},
			}}
			cur, obs := &cursor{stored: "10"}, &counter{}
			got := runWithCursor(t, sc, cur, obs, 4)
			require.Equal(t, []watch.EventKind{watch.Resumed, watch.ReplayStart, watch.Upsert, watch.Synced}, kinds(got))
			require.True(t, *sc.opts[1].SendInitialEvents)
			require.Equal(t, []string{tc.reason}, obs.cold)
			require.Eventually(t, func() bool {
				cur.mu.Lock()
				defer cur.mu.Unlock()
				return len(cur.advanced) == 1
			}, 10*time.Second, time.Millisecond)
			require.Equal(t, []string{"32"}, cur.advanced, "only the replay's end is a point to resume from")
		})
	}
}

func TestNoCursorOrAnUnreadableOneReplays(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cursor *cursor
		reason string
	}{
		{"no cursor", &cursor{}, watch.ColdNoCursor},
		{"redis down", &cursor{stored: "10", err: errors.New("connection refused")}, watch.ColdUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &script{watches: [][]apiwatch.Event{
				{{Type: apiwatch.Added, Object: object("a", "5")}, {Type: apiwatch.Bookmark, Object: endOfReplay("6")}},
			}}
			obs := &counter{}
			got := runWithCursor(t, sc, tc.cursor, obs, 3)
			require.Equal(t, []watch.EventKind{watch.ReplayStart, watch.Upsert, watch.Synced}, kinds(got))
			require.Equal(t, []string{tc.reason}, obs.cold)
		})
	}
}

// A resumed watch lists where its objects stand at its first event; when
// that list fails, the stream resumes from before the event, so the API
// server sends it again and nothing is lost.
func TestAFailedCatchUpListResumesFromBeforeTheEvent(t *testing.T) {
	client := newFakeClient()
	failures := 1
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewServiceUnavailable("etcd is busy")
		}
		return false, nil, nil
	})
	sc := &script{watches: [][]apiwatch.Event{
		{{Type: apiwatch.Modified, Object: object("a", "12")}},
		{{Type: apiwatch.Modified, Object: object("a", "12")}},
	}}
	client.PrependWatchReactor("configmaps", sc.reactor)
	got := runStream(t, client, &cursor{stored: "10"}, &counter{}, 3)
	require.Equal(t, []watch.EventKind{watch.Resumed, watch.CaughtUp, watch.Upsert}, kinds(got))
	require.Equal(t, "a", got[2].Object.GetName())
	sc.mu.Lock()
	defer sc.mu.Unlock()
	require.GreaterOrEqual(t, len(sc.opts), 2)
	require.Equal(t, "10", sc.opts[1].ResourceVersion, "resumed from before the event whose list failed")
}
