package gogit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

func TestTreeListsOnlyFilesBelowThePrefixDirectory(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, head := createRepo(t, map[string]string{
			"app/a.yaml":       "a\n",
			"app/sub/b.yaml":   "b\n",
			"apps/x.yaml":      "x\n",
			"application.yaml": "not under app/\n",
			"top.yaml":         "top\n",
		})
		client := newClient(t, r, repo)
		ctx := testContext(t)
		all := []string{"app/a.yaml", "app/sub/b.yaml", "apps/x.yaml", "application.yaml", "top.yaml"}

		for prefix, want := range map[string][]string{
			"":           all,
			".":          all,
			"./":         all,
			"app":        {"app/a.yaml", "app/sub/b.yaml"},
			"app/":       {"app/a.yaml", "app/sub/b.yaml"},
			"./app":      {"app/a.yaml", "app/sub/b.yaml"},
			"app/sub":    {"app/sub/b.yaml"},
			"apps":       {"apps/x.yaml"},
			"ap":         nil,
			"missing":    nil,
			"top.yaml":   nil,
			"app/a.yaml": nil,
		} {
			entries, err := client.Tree(ctx, head, prefix)
			require.NoError(t, err, "prefix %q", prefix)
			require.ElementsMatch(t, want, treePaths(entries), "prefix %q", prefix)
			for _, entry := range entries {
				require.Equal(t, serverGit(t, repo, "rev-parse", head+":"+entry.Path), entry.BlobID)
				require.Equal(t, forges.ModeRegular, entry.Mode)
			}
		}
		require.Equal(t, 1, client.fetches, "one fetch serves every read of the commit")

		entries, err := client.Tree(ctx, head, "app/sub")
		require.NoError(t, err)
		content, err := client.Blob(ctx, entries[0].BlobID)
		require.NoError(t, err)
		require.Equal(t, "b\n", string(content))
	})
}

func TestTreeAndBlobOfUnknownObjectsAreNotFound(t *testing.T) {
	t.Parallel()
	repo, head := createRepo(t, map[string]string{"a.yaml": "a\n"})
	client := newClient(t, remotes()[0], repo)
	ctx := testContext(t)

	_, err := client.Tree(ctx, "0123456789012345678901234567890123456789", "")
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = client.Tree(ctx, "main", "")
	require.ErrorIs(t, err, forges.ErrNotFound, "a ref name is not a commit id")
	_, err = client.Blob(ctx, "0123456789012345678901234567890123456789")
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = client.Tree(ctx, head, "../escape")
	require.ErrorIs(t, err, forges.ErrNotFound)
}

// A commit the branch has moved past is no ref's head any more; it can be
// fetched only by id, which the server must allow.
func TestTreeOfACommitNoRefPointsAtNeedsTheServerToServeIt(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, old := createRepo(t, map[string]string{"a.yaml": "old\n"})
		newer := serverGit(t, repo, "-c", "user.name=Other", "-c", "user.email=other@example.com",
			"commit-tree", "-p", old, "-m", "moved on", old+"^{tree}")
		serverGit(t, repo, "update-ref", "refs/heads/main", newer)
		client := newClient(t, r, repo)
		ctx := testContext(t)

		_, err := client.Tree(ctx, old, "")
		require.ErrorIs(t, err, forges.ErrNotFound)
		require.ErrorContains(t, err, "does not serve commits by id")

		serverGit(t, repo, "config", "uploadpack.allowReachableSHA1InWant", "true")
		entries, err := client.Tree(ctx, old, "")
		require.NoError(t, err)
		require.Equal(t, []string{"a.yaml"}, treePaths(entries))

		_, err = client.Tree(ctx, "0123456789012345678901234567890123456789", "")
		require.ErrorIs(t, err, forges.ErrNotFound, "a commit the server does not have")
	})
}

func TestReadsAfterOwnCommitsFetchNothing(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, _ := createRepo(t, map[string]string{"clusters/a.yaml": "a\n"})
		client := newClient(t, r, repo)
		ctx := testContext(t)

		head, err := client.Head(ctx, "main")
		require.NoError(t, err)
		_, err = client.Tree(ctx, head, "clusters")
		require.NoError(t, err)
		require.Equal(t, 1, client.fetches, "the first load is one fetch")

		for i := range 3 {
			result, err := client.Commit(ctx, commitRequest("main", head, fmt.Sprintf("commit %d", i),
				put(fmt.Sprintf("clusters/n%d.yaml", i), fmt.Sprintf("n: %d\n", i))))
			require.NoError(t, err)
			entries, err := client.Tree(ctx, result.Commit, "clusters")
			require.NoError(t, err)
			require.Len(t, entries, i+2)
			content, err := client.Blob(ctx, result.Blobs[fmt.Sprintf("clusters/n%d.yaml", i)])
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("n: %d\n", i), string(content))
			head = result.Commit
		}
		if r.filters {
			// The first load brought the trees only, so the pushed
			// snapshot lacks the blobs it shares with it: the first
			// Blob fetches it once, with blobs, and the commits after
			// it keep theirs.
			require.Equal(t, 2, client.fetches, "the load, and one fetch with blobs for the first Blob; commits on top of its own commits fetch nothing more")
		} else {
			require.Equal(t, 1, client.fetches, "commits on top of its own commits fetch nothing")
		}
	})
}

// A long-lived worker must not accumulate history in memory: after many
// commits the store holds exactly one snapshot, the head's.
func TestStoreKeepsOnlyTheLatestSnapshot(t *testing.T) {
	t.Parallel()
	repo, head := createRepo(t, map[string]string{"a/one.yaml": "1\n", "b/two.yaml": "2\n"})
	client := newClient(t, remotes()[2], repo)
	ctx := testContext(t)
	for i := range 10 {
		result, err := client.Commit(ctx, commitRequest("main", head, "change",
			put("a/one.yaml", fmt.Sprintf("%d\n", i)), put(fmt.Sprintf("c/%d.yaml", i), "x\n")))
		require.NoError(t, err)
		head = result.Commit
	}

	// Every tree and blob of the head, plus the head commit itself.
	reachable := serverGit(t, repo, "ls-tree", "-r", "-t", "--object-only", head)
	want := map[plumbing.Hash]bool{plumbing.NewHash(head): true, plumbing.NewHash(serverGit(t, repo, "rev-parse", head+"^{tree}")): true}
	for _, line := range strings.Split(reachable, "\n") {
		want[plumbing.NewHash(line)] = true
	}
	got := map[plumbing.Hash]bool{}
	for hash := range client.objects.ObjectStorage.Objects {
		got[hash] = true
	}
	require.Equal(t, want, got)
	shallow, err := client.objects.Shallow()
	require.NoError(t, err)
	require.Equal(t, []plumbing.Hash{plumbing.NewHash(head)}, shallow)
}

// Nothing the Client does may touch the disk. HOME and TMPDIR point at
// empty directories for the duration, and the working directory is
// compared before and after. (Not parallel: it changes the environment.)
func TestNothingIsWrittenToDisk(t *testing.T) {
	home, tmp := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	workingDirBefore := listDir(t, ".")

	for _, r := range remotes() {
		repo, _ := createRepoWithoutCLI(t, r.name)
		client := newClient(t, r, repo)
		ctx := testContext(t)
		head, err := client.Head(ctx, "main")
		require.NoError(t, err)
		entries, err := client.Tree(ctx, head, "")
		require.NoError(t, err)
		_, err = client.Blob(ctx, entries[0].BlobID)
		require.NoError(t, err)
		_, err = client.Commit(ctx, commitRequest("main", head, "in memory", put("new/file.yaml", "x\n"), del(entries[0].Path)))
		require.NoError(t, err)
	}

	require.Empty(t, listDir(t, home), "HOME stays empty")
	require.Empty(t, listDir(t, tmp), "TMPDIR stays empty")
	require.Equal(t, workingDirBefore, listDir(t, "."))
}

// createRepoWithoutCLI uses the harness, which runs git with its own HOME
// and TMPDIR, so that the only writers under test are the Client's.
func createRepoWithoutCLI(t *testing.T, suffix string) (name, head string) {
	t.Helper()
	name = repoName(t, suffix)
	head, err := shared.CreateRepoWithCommit(name, map[string]string{"dir/a.yaml": "a\n", "b.yaml": "b\n"})
	require.NoError(t, err)
	return name, head
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := make([]string, 0, len(entries))
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	return names
}
