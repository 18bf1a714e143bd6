package forgetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// PullRepo is a repository under the pull request contract: a Repo whose
// Forge implements forges.PullRequester, and what a reviewer does on the
// forge, not through that client.
type PullRepo struct {
	Repo
	// Merge merges pull request number as a reviewer would (a merge
	// commit on the base).
	Merge func(t *testing.T, number int64)
	// Close closes it without merging.
	Close func(t *testing.T, number int64)
}

// PullFixture makes repositories on a forge with pull requests.
type PullFixture interface {
	// NewPullRepo creates a repository whose main branch holds seed, as
	// Fixture.NewRepo does.
	NewPullRepo(t *testing.T, name string, seed map[string]string) PullRepo
}

// pullHead is the head branch the contract opens pull requests from, named
// as pull-request mode names its own.
const pullHead = "gitops-reverser/mirror"

// RunPullRequests runs the pull request contract (forges.PullRequester,
// and forges.BaseMerger where the forge has it) against f.
func RunPullRequests(t *testing.T, f PullFixture) {
	t.Run("OpenFindEditMerge", func(t *testing.T) { pullLifecycle(t, f) })
	t.Run("ClosedIsNotTheOpenOne", func(t *testing.T) { pullClosed(t, f) })
	t.Run("MissingIsNotFound", func(t *testing.T) { pullMissing(t, f) })
	t.Run("MergeBaseIntoHead", func(t *testing.T) { mergeBaseIntoHead(t, f) })
	t.Run("MergeableFollowsTheBase", func(t *testing.T) { mergeable(t, f) })
}

// startPull makes a repository whose head branch is one commit ahead of
// main (apps/cm.yaml "a: 1"), and returns it, its pull requester and the
// head commit.
func startPull(t *testing.T, f PullFixture, name string) (PullRepo, forges.PullRequester, string) {
	t.Helper()
	r := f.NewPullRepo(t, name, map[string]string{"README.md": "hello\n"})
	requester, ok := r.Forge.(forges.PullRequester)
	require.True(t, ok, "the forge has pull requests")
	res, err := r.Forge.Commit(context.Background(), forges.CommitRequest{Branch: pullHead, BaseHead: head(t, r.Repo, "main"),
		Message: "contract: " + t.Name() + "\n", Author: author, Committer: committer, Changes: []gitfile.Change{put("apps/cm.yaml", "a: 1\n")}})
	require.NoError(t, err)
	return r, requester, res.Commit
}

// pullLifecycle: none is open; the first open makes one; it is found; a
// second open of the pair returns it unchanged instead of a duplicate; the
// body is edited; a reviewer merges it, after which it reads merged and is
// no longer found; the next change on the head opens a new one, which is
// found past the merged one.
func pullLifecycle(t *testing.T, f PullFixture) {
	ctx := context.Background()
	r, forge, headCommit := startPull(t, f, "lifecycle")
	_, err := forge.FindPullRequest(ctx, pullHead, "main")
	require.ErrorIs(t, err, forges.ErrNotFound, "no pull request yet")

	opened, created, err := forge.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror", Body: "1 created"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, forges.PullRequestOpen, opened.State)
	require.NotEqual(t, forges.MergeConflicting, opened.Mergeable, "a head ahead of a base that did not move merges")
	requireSamePull(t, forges.PullRequest{Number: opened.Number, URL: forge.PullRequestURL(opened.Number), State: forges.PullRequestOpen,
		Head: pullHead, Base: "main", HeadCommit: headCommit, Title: "Mirror", Body: "1 created"}, opened)

	found, err := forge.FindPullRequest(ctx, pullHead, "main")
	require.NoError(t, err)
	requireSamePull(t, opened, found)
	again, created, err := forge.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Other", Body: "other"})
	require.NoError(t, err)
	require.False(t, created, "the open pull request of the pair is returned, not duplicated")
	requireSamePull(t, opened, again, "and left as it was")

	edited, err := forge.EditPullRequest(ctx, opened.Number, forges.PullRequestOptions{Title: "Mirror", Body: "2 created"})
	require.NoError(t, err)
	require.Equal(t, "2 created", edited.Body)
	read, err := forge.PullRequest(ctx, opened.Number)
	require.NoError(t, err)
	requireSamePull(t, edited, read)

	r.Merge(t, opened.Number)
	merged, err := forge.PullRequest(ctx, opened.Number)
	require.NoError(t, err)
	require.Equal(t, forges.PullRequestMerged, merged.State)
	content, ok := r.File(t, "main", "apps/cm.yaml")
	require.True(t, ok, "the merge brought the head's file to the base")
	require.Equal(t, "a: 1\n", content)
	_, err = forge.FindPullRequest(ctx, pullHead, "main")
	require.ErrorIs(t, err, forges.ErrNotFound, "a merged pull request is not the open one")

	next := commit(t, r.Repo, pullHead, head(t, r.Repo, pullHead), Update("apps/cm.yaml", "a: 1\n", "a: 2\n"))
	second, created, err := forge.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, opened.Number, second.Number)
	found, err = forge.FindPullRequest(ctx, pullHead, "main")
	require.NoError(t, err)
	require.Equal(t, second.Number, found.Number)
	require.Equal(t, next.Commit, found.HeadCommit)
}

// requireSamePull compares two answers for one pull request but their
// Mergeable, which a forge may compute between the two (GitHub answers
// null until its background job ran; its list has none):
// MergeableFollowsTheBase checks it.
func requireSamePull(t *testing.T, want, got forges.PullRequest, msgAndArgs ...any) {
	t.Helper()
	want.Mergeable, got.Mergeable = forges.MergeUnknown, forges.MergeUnknown
	require.Equal(t, want, got, msgAndArgs...)
}

// pullClosed: a pull request closed without a merge reads closed, is not
// found as the open one, and is not updated from its base.
func pullClosed(t *testing.T, f PullFixture) {
	ctx := context.Background()
	r, forge, _ := startPull(t, f, "closed")
	opened, _, err := forge.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)
	r.Close(t, opened.Number)

	closed, err := forge.PullRequest(ctx, opened.Number)
	require.NoError(t, err)
	require.Equal(t, forges.PullRequestClosed, closed.State)
	_, err = forge.FindPullRequest(ctx, pullHead, "main")
	require.ErrorIs(t, err, forges.ErrNotFound)
	if merger, ok := forge.(forges.BaseMerger); ok {
		r.ExternalCommit(t, "main", "docs/other.md", "someone else\n")
		require.ErrorIs(t, merger.MergeBaseIntoHead(ctx, opened.Number, closed.HeadCommit), forges.ErrConflict,
			"a closed pull request is not updated: read it again")
	}
}

// pullMissing: a pull request from a branch that does not exist, and one
// that does not exist, are ErrNotFound.
func pullMissing(t *testing.T, f PullFixture) {
	ctx := context.Background()
	_, forge, _ := startPull(t, f, "missing")
	_, _, err := forge.OpenPullRequest(ctx, forges.PullRequestOptions{Head: "no-such-branch", Base: "main", Title: "x"})
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = forge.PullRequest(ctx, 4242)
	require.ErrorIs(t, err, forges.ErrNotFound)
}

// mergeBaseIntoHead (forges.BaseMerger only): nothing new on the base is
// nothing to do; a stale expected head is ErrConflict and changes nothing;
// a base that moved elsewhere is merged into the head, keeping the head's
// change; a base that changed the head's file is ErrMergeConflict and
// changes nothing.
func mergeBaseIntoHead(t *testing.T, f PullFixture) {
	ctx := context.Background()
	r, forge, headCommit := startPull(t, f, "update")
	merger, ok := forge.(forges.BaseMerger)
	if !ok {
		t.Skip("the forge cannot merge the base into the head")
	}
	opened, _, err := forge.OpenPullRequest(ctx, forges.PullRequestOptions{Head: pullHead, Base: "main", Title: "Mirror"})
	require.NoError(t, err)
	require.NoError(t, merger.MergeBaseIntoHead(ctx, opened.Number, headCommit), "nothing new on the base")
	require.Equal(t, headCommit, r.Head(t, pullHead).ID)

	r.ExternalCommit(t, "main", "docs/other.md", "someone else\n")
	require.ErrorIs(t, merger.MergeBaseIntoHead(ctx, opened.Number, r.Head(t, "main").ID), forges.ErrConflict)
	require.Equal(t, headCommit, r.Head(t, pullHead).ID, "a refused update changes nothing")

	require.NoError(t, merger.MergeBaseIntoHead(ctx, opened.Number, headCommit))
	updated := r.Head(t, pullHead)
	require.NotEqual(t, headCommit, updated.ID)
	require.Contains(t, updated.Parents, headCommit, "the base is merged into the head; the head's history is kept")
	content, ok := r.File(t, pullHead, "docs/other.md")
	require.True(t, ok, "the base's commit is in the head")
	require.Equal(t, "someone else\n", content)
	content, _ = r.File(t, pullHead, "apps/cm.yaml")
	require.Equal(t, "a: 1\n", content, "and the head's own change is kept")

	r.ExternalCommit(t, "main", "apps/cm.yaml", "a: human on main\n")
	r.ExternalCommit(t, pullHead, "apps/cm.yaml", "a: human on the head\n")
	current := r.Head(t, pullHead).ID
	require.ErrorIs(t, merger.MergeBaseIntoHead(ctx, opened.Number, current), forges.ErrMergeConflict)
	require.Equal(t, current, r.Head(t, pullHead).ID, "a conflicting update changes nothing")
}
