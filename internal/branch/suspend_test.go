package branch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

// TestASuspendedTargetLosesItsOpenWindowAndKeepsItsRegistration: what the
// worker held for a target when it was suspended is never pushed (nothing
// is written for a suspended GitTarget), and the target stays known, so
// the replay on resume commits through the same worker.
func TestASuspendedTargetLosesItsOpenWindowAndKeepsItsRegistration(t *testing.T) {
	w := newWorker(t, "suspended", nil, nil)
	write(t, w, branch.Author{}, cm("a", "1"))
	require.NoError(t, w.Suspend(context.Background(), target))
	flush(t, w)
	require.Empty(t, commits(t, "suspended"), "the window open at the suspension is dropped")

	write(t, w, branch.Author{}, cm("a", "2"))
	flush(t, w)
	require.Len(t, commits(t, "suspended"), 1)
	require.Contains(t, show(t, "suspended", "mirror/team/configmaps/a.yaml"), `v: "2"`)
}
