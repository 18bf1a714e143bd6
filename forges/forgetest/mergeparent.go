package forgetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// mergeParent is how pull-request mode starts its head branch afresh from
// a base that moved (or took the merged pull request) without a
// force-push (forges.CommitRequest.MergeParent): the commit's first parent
// is the head branch's head, its second the base's head, and its tree the
// base's with the changes applied, planned on the base's blobs. The branch
// moves only from the expected head, as for any commit. A forge that
// cannot make a commit of two parents says so (forges.MergeCommitter) and
// refuses the request, writing nothing.
func mergeParent(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "merge-parent", map[string]string{"base.yaml": "b: 1\n", "apps/cm.yaml": "a: 0\n"})
	ctx := context.Background()
	mirror, base := startMirror(t, r)
	req := commitRequest(t, "mirror", mirror, Update("apps/cm.yaml", "a: 0\n", "a: 2\n"), put("apps/new.yaml", "n: 1\n"))
	req.MergeParent = base
	if !forges.CommitsMergeParent(r.Forge) {
		_, err := r.Forge.Commit(ctx, req)
		require.ErrorIs(t, err, forges.ErrMergeParentUnsupported, "a forge without merge commits refuses the request")
		require.Equal(t, mirror, r.Head(t, "mirror").ID, "and writes nothing")
		return
	}
	res, err := r.Forge.Commit(ctx, req)
	require.NoError(t, err)
	require.Equal(t, res.Commit, head(t, r, "mirror"), "the branch moved: a fast-forward from the expected head")
	require.Equal(t, []string{mirror, base}, r.Head(t, "mirror").Parents, "first parent the expected head, second the merge parent")
	requireBranchFiles(t, r, "mirror", map[string]string{"base.yaml": "b: 1\n", "docs/other.md": "someone else\n",
		"apps/cm.yaml": "a: 2\n", "apps/new.yaml": "n: 1\n"}, "apps/old.yaml")
	require.Contains(t, res.Blobs, "apps/new.yaml", "the result names the blobs it put")
	require.Equal(t, base, head(t, r, "main"), "the base did not move")

	r.ExternalCommit(t, "mirror", "theirs.yaml", "v: external\n")
	moved := head(t, r, "mirror")
	stale := commitRequest(t, "mirror", res.Commit, put("apps/later.yaml", "l: 1\n"))
	stale.MergeParent = base
	_, err = r.Forge.Commit(ctx, stale)
	require.ErrorIs(t, err, forges.ErrConflict, "a stale expected head is refused, merge parent or not")
	require.Equal(t, moved, r.Head(t, "mirror").ID, "nothing changed")
	theirs, _ := r.File(t, "mirror", "theirs.yaml")
	require.Equal(t, "v: external\n", theirs, "the other writer's commit stays")
}

// startMirror makes the situation pull-request mode meets after a merged
// pull request: a head branch "mirror" one commit ahead of main's first
// commit (apps/cm.yaml changed, apps/old.yaml added), and main moved on
// since (docs/other.md). It returns the heads of mirror and main.
func startMirror(t *testing.T, r Repo) (mirror, base string) {
	t.Helper()
	start := head(t, r, "main")
	res, err := r.Forge.Commit(context.Background(), forges.CommitRequest{
		Branch: "mirror", BaseHead: start, Message: "contract: the head branch\n", Author: author, Committer: committer,
		Changes: []gitfile.Change{Update("apps/cm.yaml", "a: 0\n", "a: 1\n"), put("apps/old.yaml", "o: 1\n")},
	})
	require.NoError(t, err)
	r.ExternalCommit(t, "main", "docs/other.md", "someone else\n")
	base = head(t, r, "main")
	require.NotEqual(t, start, base)
	return res.Commit, base
}

// mergeParentInAChain: a chain whose first commit carries the merge parent
// is a merge and then commits on it; a merge parent on a later request is
// refused before anything is written.
func mergeParentInAChain(t *testing.T, f Fixture) {
	r := f.NewRepo(t, "merge-parent-chain", map[string]string{"base.yaml": "b: 1\n", "apps/cm.yaml": "a: 0\n"})
	chainer, ok := r.Forge.(forges.ChainCommitter)
	if !ok || !forges.CommitsMergeParent(r.Forge) {
		t.Skip("this forge makes no chains, or no merge commits")
	}
	ctx := context.Background()
	mirror, base := startMirror(t, r)
	reqs := []forges.CommitRequest{
		commitRequest(t, "mirror", mirror, Update("apps/cm.yaml", "a: 0\n", "a: 2\n")),
		commitRequest(t, "mirror", "", Update("apps/cm.yaml", "a: 2\n", "a: 3\n")),
	}
	refused := append([]forges.CommitRequest(nil), reqs...)
	refused[1].MergeParent = base
	_, err := chainer.CommitChain(ctx, refused)
	require.Error(t, err, "only the first request of a chain may carry a merge parent")
	require.Equal(t, mirror, head(t, r, "mirror"), "nothing was written")

	reqs[0].MergeParent = base
	results, err := chainer.CommitChain(ctx, reqs)
	require.NoError(t, err)
	require.Equal(t, results[1].Commit, head(t, r, "mirror"))
	require.Equal(t, []string{results[0].Commit}, r.Head(t, "mirror").Parents, "the second commit is on the merge")
	requireBranchFiles(t, r, "mirror", map[string]string{"apps/cm.yaml": "a: 3\n", "docs/other.md": "someone else\n"}, "apps/old.yaml")
}

// requireBranchFiles checks the files at the head of branch: present with
// their content, and absent.
func requireBranchFiles(t *testing.T, r Repo, branch string, present map[string]string, absent ...string) {
	t.Helper()
	for path, want := range present {
		content, ok := r.File(t, branch, path)
		require.True(t, ok, "%s is there", path)
		require.Equal(t, want, content, path)
	}
	for _, path := range absent {
		_, ok := r.File(t, branch, path)
		require.False(t, ok, "%s is not there", path)
	}
}
