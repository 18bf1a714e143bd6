package gogit

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

// manyFiles are n distinct small files in 20 directories, as a mirrored
// cluster's ConfigMaps are.
func manyFiles(n int) map[string]string {
	files := make(map[string]string, n)
	for f := range n {
		files[fmt.Sprintf("clusters/prod/namespace-%d/configmap-%d.yaml", f%20, f)] =
			fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: namespace-%d\ndata:\n  key: value-%d\n", f, f%20, f)
	}
	return files
}

// snapshotObjects counts the trees of rev on server, and its blobs: what
// a depth-1 fetch of rev carries besides the commit.
func snapshotObjects(t *testing.T, server *testServer, repo, rev string) (trees, blobs int) {
	t.Helper()
	out, err := server.Git(repo, "ls-tree", "-r", "-t", rev)
	require.NoError(t, err)
	trees = 1 // the root
	for _, line := range strings.Split(out, "\n") {
		switch strings.Fields(line)[1] {
		case "tree":
			trees++
		case "blob":
			blobs++
		}
	}
	return trees, blobs
}

// filteringRemotes are the transports that reach a git server over the
// network (the file:// one runs the local git), to the server that allows
// filters and to the one that does not.
func filteringRemotes() []remote {
	var out []remote
	for _, server := range []*testServer{shared, withoutFilters} {
		for _, r := range remotesOf(server)[:2] {
			r.name = map[bool]string{true: "filters", false: "no-filters"}[r.filters] + "/" + r.name
			out = append(out, r)
		}
	}
	return out
}

func forEachFilteringRemote(t *testing.T, test func(t *testing.T, r remote)) {
	t.Helper()
	forEachRemoteIn(t, filteringRemotes(), test)
}

// A Tree of a 2,000-file snapshot brings the commit and its trees and no
// blob from a server that allows filters, all of it from one that does
// not. A Blob then fetches the snapshot again, with its blobs, once for
// all the reads that follow, concurrent ones included.
func TestATreeFetchesNoBlobWhenTheServerAllowsFilters(t *testing.T) {
	t.Parallel()
	forEachFilteringRemote(t, func(t *testing.T, r remote) {
		files := manyFiles(2000)
		repo, head := createRepoOn(t, r.server, files)
		trees, blobs := snapshotObjects(t, r.server, repo, head)
		require.Equal(t, 2000, blobs)
		client := newClient(t, r, repo)
		ctx := testContext(t)

		entries, err := client.Tree(ctx, head, "")
		require.NoError(t, err)
		require.Len(t, entries, 2000)
		require.Equal(t, 1, client.fetches)
		if r.filters {
			require.Equal(t, int64(1+trees), client.fetchedObjects, "the commit and its trees, no blob")
		} else {
			require.Equal(t, int64(1+trees+blobs), client.fetchedObjects, "the whole snapshot")
		}
		afterTree := client.fetchedObjects

		var wg sync.WaitGroup
		read := make([]string, 50)
		errs := make([]error, 50)
		for i := range read {
			wg.Add(1)
			go func() {
				defer wg.Done()
				content, err := client.Blob(ctx, entries[i*40].BlobID)
				read[i], errs[i] = string(content), err
			}()
		}
		wg.Wait()
		for i := range read {
			require.NoError(t, errs[i])
			require.Equal(t, files[entries[i*40].Path], read[i])
		}
		if r.filters {
			require.Equal(t, 2, client.fetches, "one fetch brings the blobs for every read")
			require.GreaterOrEqual(t, client.fetchedObjects-afterTree, int64(blobs), "that fetch brought the blobs")
		} else {
			require.Equal(t, 1, client.fetches, "the blobs came with the tree")
		}
	})
}

// A commit built on a snapshot fetched without blobs needs none: it
// pushes, the remote's tree is the old one with the changes, and the
// server's repository is whole (git fsck).
func TestACommitOnAFilteredSnapshotPushes(t *testing.T) {
	t.Parallel()
	forEachFilteringRemote(t, func(t *testing.T, r remote) {
		files := manyFiles(200)
		repo, head := createRepoOn(t, r.server, files)
		client := newClient(t, r, repo)
		ctx := testContext(t)

		_, err := client.Tree(ctx, head, "clusters/prod/namespace-3")
		require.NoError(t, err)
		if r.filters {
			require.Zero(t, blobsInStore(t, client))
		}
		res, err := client.Commit(ctx, commitRequest("main", head, "edit",
			put("clusters/prod/namespace-3/configmap-3.yaml", "changed\n"),
			put("clusters/prod/namespace-21/new.yaml", "new\n"),
			del("clusters/prod/namespace-4/configmap-4.yaml")))
		require.NoError(t, err)
		require.Equal(t, 1, client.fetches, "the trees were enough")

		files["clusters/prod/namespace-3/configmap-3.yaml"] = "changed\n"
		files["clusters/prod/namespace-21/new.yaml"] = "new\n"
		delete(files, "clusters/prod/namespace-4/configmap-4.yaml")
		paths := make([]string, 0, len(files))
		for path := range files {
			paths = append(paths, path)
		}
		server := r.server
		out, err := server.Git(repo, "ls-tree", "-r", "--name-only", res.Commit)
		require.NoError(t, err)
		require.ElementsMatch(t, paths, strings.Split(out, "\n"))
		for _, path := range []string{"clusters/prod/namespace-3/configmap-3.yaml", "clusters/prod/namespace-21/new.yaml", "clusters/prod/namespace-5/configmap-5.yaml"} {
			content, err := server.ReadFile(repo, res.Commit, path)
			require.NoError(t, err)
			require.Equal(t, files[path], content)
		}
		_, err = server.Git(repo, "fsck", "--full", "--strict", "--no-dangling")
		require.NoError(t, err, "the server's repository is whole")

		// And the next commit, on the client's own head, still needs no
		// fetch.
		next, err := client.Commit(ctx, commitRequest("main", res.Commit, "again", put("clusters/prod/namespace-3/configmap-3.yaml", "again\n")))
		require.NoError(t, err)
		require.Equal(t, 1, client.fetches)
		content, err := server.ReadFile(repo, next.Commit, "clusters/prod/namespace-3/configmap-3.yaml")
		require.NoError(t, err)
		require.Equal(t, "again\n", content)
	})
}

// A blob no snapshot of the client has is not found, with or without
// filters, after one fetch that brings the released blobs back.
func TestABlobInNoSnapshotIsNotFoundAfterAFilteredFetch(t *testing.T) {
	t.Parallel()
	forEachFilteringRemote(t, func(t *testing.T, r remote) {
		repo, head := createRepoOn(t, r.server, map[string]string{"a.yaml": "a\n"})
		client := newClient(t, r, repo)
		ctx := testContext(t)
		_, err := client.Tree(ctx, head, "")
		require.NoError(t, err)
		_, err = client.Blob(ctx, "0123456789012345678901234567890123456789")
		require.ErrorIs(t, err, forges.ErrNotFound)
		_, err = client.Blob(ctx, "0123456789012345678901234567890123456789")
		require.ErrorIs(t, err, forges.ErrNotFound)
		require.Equal(t, map[bool]int{true: 2, false: 1}[r.filters], client.fetches,
			"the blobs came back once, and a blob they do not have is not fetched for again")
	})
}

// A branch that moved between the Tree and the first Blob: the old head is
// no longer at a ref, and this server does not serve commits by id, but
// the refetch of the ref brings the new head, whose blobs include every
// file the move did not change. Those are read; a file the move changed
// is not found, as the snapshot it was listed in is gone.
func TestABlobAfterTheBranchMovedIsReadFromTheNewHead(t *testing.T) {
	t.Parallel()
	forEachFilteringRemote(t, func(t *testing.T, r remote) {
		if !r.filters {
			t.Skip("without filters the blobs come with the tree")
		}
		repo, head := createRepoOn(t, r.server, map[string]string{"a.yaml": "a\n", "b.yaml": "b\n"})
		client := newClient(t, r, repo)
		ctx := testContext(t)
		entries, err := client.Tree(ctx, head, "")
		require.NoError(t, err)
		_, err = r.server.CommitFiles(repo, map[string]string{"b.yaml": "b2\n"}, "someone else")
		require.NoError(t, err)

		content, err := client.Blob(ctx, entries[0].BlobID)
		require.NoError(t, err)
		require.Equal(t, "a\n", string(content))
		_, err = client.Blob(ctx, entries[1].BlobID)
		require.ErrorIs(t, err, forges.ErrNotFound)
	})
}
