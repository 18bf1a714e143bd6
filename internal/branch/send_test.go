package branch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

// TestAWriteWhoseContextEndedIsNeverQueued: a caller whose context ended
// (a watch stream stopping for a handover, whose wait for the change's
// author was cut short) has nothing queued, though the queue has room;
// so nothing it sends is committed, and nothing is left for a flush.
func TestAWriteWhoseContextEndedIsNeverQueued(t *testing.T) {
	w := newWorker(t, "ended-context", nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Before the fix the worker's select picked the queue or the ended
	// context at random: one of a hundred writes got through all but
	// surely.
	for range 100 {
		require.ErrorIs(t, w.Write(ctx, target, branch.Author{Name: "alice", Email: "alice@example.com"}, cm("late", "1")), context.Canceled)
	}
	flush(t, w)
	require.Empty(t, commits(t, "ended-context"), "nothing was committed")
}
