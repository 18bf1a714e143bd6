package branch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

// whenSettled registers a settle waiter and returns the channel it closes.
func whenSettled(t *testing.T, w *branch.Worker, target branch.TargetKey) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	require.NoError(t, w.WhenSettled(context.Background(), target, func(string) { close(done) }))
	return done
}

func awaitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		require.FailNow(t, "not settled", what)
	}
}

func TestWhenSettledWaitsForTheEarlierWritesToReachTheRemoteWithoutClosingTheWindow(t *testing.T) {
	w := newWorker(t, "settled", nil, nil)
	write(t, w, branch.Author{}, cm("a", "1"))
	afterA := whenSettled(t, w, target)
	// A target with nothing held settles at once; the worker handles
	// messages in order, so by then it has registered afterA and left the
	// window open.
	awaitClosed(t, whenSettled(t, w, branch.TargetKey{Namespace: "team", Name: "idle"}), "an idle target")
	select {
	case <-afterA:
		require.FailNow(t, "settled while the write was still in an open window")
	default:
	}
	require.Empty(t, commits(t, "settled"), "waiting closed no window")

	flush(t, w)
	awaitClosed(t, afterA, "the write in Git")
	require.Contains(t, show(t, "settled", "mirror/team/configmaps/a.yaml"), `v: "1"`)
	awaitClosed(t, whenSettled(t, w, target), "nothing held after the commit")
}

func TestWhenSettledAnswersOnceTheTargetIsRemoved(t *testing.T) {
	w := newWorker(t, "settled-removed", nil, nil)
	write(t, w, branch.Author{}, cm("a", "1"))
	afterA := whenSettled(t, w, target)
	require.NoError(t, w.RemoveTarget(context.Background(), target))
	awaitClosed(t, afterA, "the dropped target")
}
