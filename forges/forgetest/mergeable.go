package forgetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

// mergeableWait bounds the wait for a forge that computes mergeability in
// the background (GitHub's null, Gitea's check queue): long enough for a
// loaded machine, short enough that a forge that never answers fails.
const mergeableWait = time.Minute

// mergeable: a base that moved elsewhere still merges (clean); a base
// that changed the head's file conflicts (conflicting). Where the forge
// computes it later, the pull request is read again on a ticker until it
// says so: the sentinel is the forge's own answer, never a sleep.
func mergeable(t *testing.T, f PullFixture) {
	ctx := context.Background()
	r, forge, _ := startPull(t, f, "mergeable")
	opened, _, err := forge.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)

	r.ExternalCommit(t, "main", "docs/other.md", "someone else\n")
	awaitMergeable(t, forge, opened.Number, forges.MergeClean, "a base that moved elsewhere merges")

	r.ExternalCommit(t, "main", "apps/cm.yaml", "a: human on main\n")
	awaitMergeable(t, forge, opened.Number, forges.MergeConflicting, "a base that changed the head's file conflicts")
}

// awaitMergeable reads pull request number until its Mergeable is want,
// failing past mergeableWait with the last answer.
func awaitMergeable(t *testing.T, forge forges.PullRequester, number int64, want forges.MergeState, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mergeableWait)
	defer cancel()
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		pr, err := forge.PullRequest(ctx, number)
		require.NoError(t, err)
		if pr.Mergeable == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: pull request #%d still reads %q, want %q", why, number, pr.Mergeable, want)
		case <-ticker.C:
		}
	}
}
