package mirror

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// TestADeleteTheStreamSawOutlivesTheStreamsStop: the stream of a claim
// stops (its WatchRule was deleted) while a deletion it saw waits for its
// author. The deletion still reaches the worker, named by the fact that
// arrives after the stop.
func TestADeleteTheStreamSawOutlivesTheStreamsStop(t *testing.T) {
	streamCtx, stopStream := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	sink := &recordingSink{}
	target := &Target{Key: branch.TargetKey{Namespace: "team", Name: "mirror"}, ctx: context.Background(), sink: sink,
		observer: nopObserver{}, attribution: &Attribution{Resolver: factAfterStop{stopped: stopped}}}
	glue := &streamGlue{target: target, claim: rules.Claim{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap"}}
	gone := &unstructured.Unstructured{}
	gone.SetNamespace("team")
	gone.SetName("gone")

	go func() {
		stopStream()
		close(stopped)
	}()
	ev := watch.Event{Kind: watch.Delete, Type: apiwatch.Deleted, Object: gone}
	ev.Prepared = glue.prepare(streamCtx, ev) // the wait for the author
	require.NoError(t, glue.handle(streamCtx, ev))
	require.Len(t, sink.writes, 1, "the deletion reached the worker")
	require.Equal(t, "gone", sink.writes[0].ID.Name)
	require.Equal(t, "alice", sink.authors[0].Name, "named by the fact that came after the stop")
}

// factAfterStop answers once the stream has stopped: alice, unless the
// wait was given up.
type factAfterStop struct{ stopped chan struct{} }

func (f factAfterStop) Resolve(ctx context.Context, _ attribution.Query) attribution.Resolution {
	<-f.stopped
	if ctx.Err() != nil {
		return attribution.Resolution{Tier: attribution.TierAbsent}
	}
	return attribution.Resolution{Tier: attribution.TierExact, Actor: facts.Actor{Username: "alice"}}
}

// recordingSink keeps the writes; one sent under an ended context is
// refused, as the worker may refuse it.
type recordingSink struct {
	writes  []branch.Write
	authors []branch.Author
	// closes are the closeWindow of each Sync.
	closes []bool
}

func (s *recordingSink) Write(ctx context.Context, _ branch.TargetKey, author branch.Author, w branch.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.writes, s.authors = append(s.writes, w), append(s.authors, author)
	return nil
}

func (s *recordingSink) Sync(_ context.Context, _ branch.TargetKey, _ *branch.Sweep, closeWindow bool) error {
	s.closes = append(s.closes, closeWindow)
	return nil
}

func (s *recordingSink) WhenSettled(_ context.Context, _ branch.TargetKey, fn func(head string)) error {
	fn("")
	return nil
}

func (s *recordingSink) HoldsCommit(context.Context, string) (bool, error) { return true, nil }

// TestTheLastReplayDoesNotCloseTheWindowWhileAnotherStreamCatchesUp: a
// target with a stream in each of two namespaces; "one" resumed from its
// cursor, "two" replays. The replay ends while "one"'s re-delivered events
// are still coming, so its Sync does not close the window; the catch-up's
// end does. A catch-up's write is marked, so the worker holds it too.
func TestTheLastReplayDoesNotCloseTheWindowWhileAnotherStreamCatchesUp(t *testing.T) {
	ctx := context.Background()
	sink := &recordingSink{}
	target := &Target{Key: branch.TargetKey{Namespace: "team", Name: "mirror"}, ctx: ctx, sink: sink, observer: nopObserver{},
		streams: map[claimKey]*running{}}
	glues := map[string]*streamGlue{}
	for _, ns := range []string{"one", "two"} {
		claim := rules.Claim{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespace: ns}
		target.streams[claimKey{claim.GVR, ns}] = &running{claim: claim}
		glues[ns] = &streamGlue{target: target, claim: claim}
	}
	changed := &unstructured.Unstructured{}
	changed.SetNamespace("one")
	changed.SetName("changed")
	catchUp := watch.Event{Kind: watch.Upsert, Type: apiwatch.Modified, Object: changed, CatchUp: true}

	steps := []struct {
		stream string
		event  watch.Event
		closes []bool
	}{
		{"one", watch.Event{Kind: watch.Resumed}, nil},
		{"two", watch.Event{Kind: watch.ReplayStart}, nil},
		{"one", catchUp, nil},
		{"two", watch.Event{Kind: watch.Synced}, []bool{false}},
		{"one", watch.Event{Kind: watch.CaughtUp}, []bool{false, true}},
	}
	for _, step := range steps {
		ev := step.event
		if ev.Kind == watch.Upsert {
			ev.Prepared = glues[step.stream].prepare(ctx, ev)
		}
		require.NoError(t, glues[step.stream].handle(ctx, ev))
		require.Equal(t, step.closes, sink.closes, "after %v of %s", ev.Kind, step.stream)
	}
	require.Len(t, sink.writes, 1)
	require.True(t, sink.writes[0].CatchUp, "the worker holds the catch-up's write like a replay's")
}
