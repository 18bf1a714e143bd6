package gogit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAMergeParentCommitIsOnePushOnABaseTheClientRead: the worker plans a
// fresh head on the base's tree (Tree), so the merge commit's tree is
// built from the snapshot that read fetched and the commit is one push,
// no fetch; on a base it did not read, the base's snapshot is fetched
// first (one depth-1 fetch). Both land as commits of two parents.
func TestAMergeParentCommitIsOnePushOnABaseTheClientRead(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, start := createRepo(t, map[string]string{"apps/cm.yaml": "a: 0\n"})
		client := newClient(t, r, repo)
		ctx := testContext(t)
		req := commitRequest("mirror", "", "the head branch", put("apps/cm.yaml", "a: 1\n"))
		req.BaseHead = start
		mirror, err := client.Commit(ctx, req)
		require.NoError(t, err)
		fetches := client.fetches

		base, err := shared.CommitFiles(repo, map[string]string{"docs/other.md": "someone else\n"}, "a human on main")
		require.NoError(t, err)
		_, err = client.Tree(ctx, base, "apps")
		require.NoError(t, err)
		require.Equal(t, fetches+1, client.fetches, "the worker reads the base's tree: one fetch")
		fresh := commitRequest("mirror", mirror.Commit, "fresh from the base", put("apps/cm.yaml", "a: 2\n"))
		fresh.MergeParent = base
		merged, err := client.Commit(ctx, fresh)
		require.NoError(t, err)
		require.Equal(t, fetches+1, client.fetches, "the merge commit is built on that snapshot: a push, no fetch")
		require.Equal(t, merged.Commit+" "+mirror.Commit+" "+base, serverGit(t, repo, "rev-list", "--parents", "-n", "1", "mirror"))
		require.Equal(t, "someone else\n", serverFile(t, repo, "mirror", "docs/other.md"))

		base, err = shared.CommitFiles(repo, map[string]string{"docs/more.md": "more\n"}, "a human on main again")
		require.NoError(t, err)
		fresh = commitRequest("mirror", merged.Commit, "fresh again", put("apps/cm.yaml", "a: 3\n"))
		fresh.MergeParent = base
		_, err = client.Commit(ctx, fresh)
		require.NoError(t, err)
		require.Equal(t, fetches+2, client.fetches, "a base the client did not read is fetched first: one fetch")
		require.Equal(t, "more\n", serverFile(t, repo, "mirror", "docs/more.md"))
	})
}
