package branch

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// emptyRepository is a forge on an empty repository that records the
// commits it is asked for and accepts each one.
type emptyRepository struct {
	forges.Forge
	commits []forges.CommitRequest
}

func (r *emptyRepository) Head(context.Context, string) (string, error) {
	if len(r.commits) == 0 {
		return "", forges.ErrEmptyRepository
	}
	return "0000000000000000000000000000000000000001", nil
}

func (r *emptyRepository) Commit(_ context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	r.commits = append(r.commits, req)
	return forges.CommitResult{Commit: "0000000000000000000000000000000000000001"}, nil
}

func (r *emptyRepository) CommitURL(string) string { return "" }

// replayed is ConfigMap name in namespace as a replay reports it.
func replayed(namespace, name string) Write {
	return Write{ID: manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: namespace, Name: name},
		YAML:   []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + namespace + "\n"),
		Replay: true}
}

// handDrivenWorker is a worker with a 1 ms commit window on a fake clock,
// on an empty repository, writing one GitTarget (key).
func handDrivenWorker(t *testing.T) (*Worker, *emptyRepository, *clocktesting.FakeClock, TargetKey) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	forge := &emptyRepository{}
	w := New(Config{Key: Key{Branch: "main"}, Forge: forge, Clock: clock, CommitWindow: time.Millisecond, Log: testr.New(t)})
	key := TargetKey{Namespace: "team", Name: "mirror"}
	w.updateTarget(context.Background(), targetMsg{target: Target{Key: key, Path: "mirror"}})
	return w, forge, clock, key
}

// The worker's loop is driven by hand here (handle, tick) on a fake clock,
// so "the window did not close" is exact rather than a race.
func TestAReplayOverManyStreamsIsOneCommitWhateverTheWindow(t *testing.T) {
	ctx := context.Background()
	w, forge, clock, key := handDrivenWorker(t)

	for _, ns := range []string{"one", "two", "three"} {
		wr := replayed(ns, "cm")
		w.handle(ctx, writeMsg{target: key, write: wr})
		clock.Step(time.Second) // far past the 1 ms window
		w.tick(ctx)
		last := ns == "three"
		w.handle(ctx, syncMsg{target: key, closeWindow: last,
			sweep: &Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: ns}, Present: []manifest.ObjectID{wr.ID}}})
		if !last {
			clock.Step(time.Second)
			w.tick(ctx)
			require.Empty(t, forge.commits, "the replay of %s is done but the target's is not", ns)
		}
	}
	require.Len(t, forge.commits, 1, "the target's replay completed: one commit")
	require.Len(t, forge.commits[0].Changes, 4, "three objects and the README")

	live := replayed("one", "live")
	live.Replay = false
	w.handle(ctx, writeMsg{target: key, write: live})
	clock.Step(time.Second)
	w.tick(ctx)
	require.Len(t, forge.commits, 2, "after the replay the 1 ms window holds nothing back")
}

func TestAReplayThatNeverCompletesHoldsItsWindowOnlyForAReplaySilence(t *testing.T) {
	ctx := context.Background()
	w, forge, clock, key := handDrivenWorker(t)
	wr := replayed("ns", "cm")
	w.handle(ctx, writeMsg{target: key, write: wr})
	w.handle(ctx, syncMsg{target: key, sweep: &Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "ns"}, Present: []manifest.ObjectID{wr.ID}}})
	clock.Step(replaySilence - time.Millisecond)
	w.tick(ctx)
	require.Empty(t, forge.commits)
	clock.Step(time.Millisecond) // another stream is stuck: its siblings go out
	w.tick(ctx)
	require.Len(t, forge.commits, 1)
}

// TestACatchUpIsHeldUntilEveryStreamIsLive: a resumed watch re-delivers
// two of alice's changes from before the restart; the 1 ms window does not
// commit the first alone. The target's last stream to catch up closes the
// window: one commit with both. A catch-up that never hears its end (a
// quiet stream whose watch has not passed its list) is held only for a
// replay silence.
func TestACatchUpIsHeldUntilEveryStreamIsLive(t *testing.T) {
	alice := Author{Name: "alice", Email: "alice@example.com"}
	caughtUp := func(namespace, name string) Write {
		wr := replayed(namespace, name)
		wr.Replay, wr.CatchUp = false, true
		return wr
	}
	t.Run("closed by the last stream to catch up", func(t *testing.T) {
		ctx := context.Background()
		w, forge, clock, key := handDrivenWorker(t)
		w.handle(ctx, writeMsg{target: key, author: alice, write: caughtUp("one", "a")})
		clock.Step(time.Second)
		w.tick(ctx)
		require.Empty(t, forge.commits, "one stream's catch-up is delivered, another's is not")
		w.handle(ctx, writeMsg{target: key, author: alice, write: caughtUp("two", "b")})
		w.handle(ctx, syncMsg{target: key, closeWindow: true})
		require.Len(t, forge.commits, 1)
		require.Len(t, forge.commits[0].Changes, 3, "both objects and the README")
	})
	t.Run("a quiet stream holds it for a replay silence at most", func(t *testing.T) {
		ctx := context.Background()
		w, forge, clock, key := handDrivenWorker(t)
		w.handle(ctx, writeMsg{target: key, author: alice, write: caughtUp("one", "a")})
		clock.Step(replaySilence - time.Millisecond)
		w.tick(ctx)
		require.Empty(t, forge.commits)
		clock.Step(time.Millisecond)
		w.tick(ctx)
		require.Len(t, forge.commits, 1)
	})
}
