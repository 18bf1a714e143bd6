package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

// TestEveryNotifiedTargetIsDeliveredHoweverManyPileUp: at start-up
// targets × streams × phase changes notify while nobody reads yet; each
// notification for a target merges into the one queued, none is lost, so
// every target's status is refreshed.
func TestEveryNotifiedTargetIsDeliveredHoweverManyPileUp(t *testing.T) {
	const targets, perTarget = 1000, 5
	e := New(Options{})
	want := map[branch.TargetKey]bool{}
	for range perTarget {
		for i := range targets {
			k := branch.TargetKey{Namespace: "team", Name: fmt.Sprintf("target-%d", i)}
			want[k] = true
			e.notify(k) // nobody reads: this must not block
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-stopped) })

	// A bound only so a lost notification fails rather than hangs.
	deadline := time.After(30 * time.Second)
	delivered := map[branch.TargetKey]int{}
	for len(delivered) < len(want) {
		select {
		case ev := <-e.Changed():
			k := branch.TargetKey{Namespace: ev.Object.GetNamespace(), Name: ev.Object.GetName()}
			require.True(t, want[k], "an unknown target %s", k)
			delivered[k]++
		case <-deadline:
			require.Failf(t, "notifications were lost", "%d of %d targets delivered", len(delivered), len(want))
		}
	}
	for k, n := range delivered {
		require.Equal(t, 1, n, "the notifications of %s merge into one", k)
	}
}

// TestATargetRefusedBeforeTheStartIsReconciledOnceTheEngineStarts: a
// reconcile that found the engine not started asks to run again at its
// start, instead of waiting for a requeue.
func TestATargetRefusedBeforeTheStartIsReconciledOnceTheEngineStarts(t *testing.T) {
	e := New(Options{})
	k := branch.TargetKey{Namespace: "team", Name: "early"}
	require.ErrorIs(t, e.ApplyTarget(TargetSpec{Key: k}), ErrNotStarted)
	e.RetryWhenStarted(k)
	select {
	case <-e.Changed():
		require.FailNow(t, "delivered before the start")
	default:
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-stopped) })
	select {
	case ev := <-e.Changed():
		require.Equal(t, "early", ev.Object.GetName())
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the target was not reconciled at the start")
	}
}
