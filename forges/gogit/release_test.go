package gogit

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

// blobsInStore counts the blobs the client's object store holds.
func blobsInStore(t *testing.T, c *Client) int {
	t.Helper()
	iter, err := c.objects.IterEncodedObjects(plumbing.BlobObject)
	require.NoError(t, err)
	n := 0
	require.NoError(t, iter.ForEach(func(plumbing.EncodedObject) error { n++; return nil }))
	return n
}

// loadedApp is a client that has read app/ (a.yaml and b.yaml) at the head
// of a new repository: one fetch, the snapshot with its blobs.
func loadedApp(t *testing.T, r remote) (client *Client, repo, head string, entries []forges.TreeEntry) {
	t.Helper()
	repo, head = createRepo(t, map[string]string{"app/a.yaml": "a\n", "app/b.yaml": "b\n"})
	client = newClient(t, r, repo)
	entries, err := client.Tree(testContext(t), head, "app")
	require.NoError(t, err)
	return client, repo, head, entries
}

// Released after a push, the store keeps the new head's commit and trees,
// not its blobs: the next commit builds on the trees without a fetch, and
// a read of a blob the store let go fetches the snapshot again.
func TestReleasedAfterAPushTheNextCommitNeedsNoFetch(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		client, repo, head, entries := loadedApp(t, r)
		ctx := testContext(t)
		if r.filters {
			require.Zero(t, blobsInStore(t, client), "a server that allows filters sends the trees only")
		} else {
			require.Equal(t, 2, blobsInStore(t, client), "a fetched snapshot keeps its blobs for the reads that follow")
		}

		first, err := client.Commit(ctx, commitRequest("main", head, "first", put("app/c.yaml", "c\n")))
		require.NoError(t, err)
		client.ReleaseBlobs()
		require.Zero(t, blobsInStore(t, client), "the pushed snapshot keeps its trees only")
		second, err := client.Commit(ctx, commitRequest("main", first.Commit, "second", put("app/d.yaml", "d\n"), del("app/a.yaml")))
		require.NoError(t, err)
		require.Zero(t, blobsInStore(t, client), "a commit on released trees keeps none of its blobs either")
		require.Equal(t, 1, client.fetches, "a commit on the client's own head fetches nothing")
		require.ElementsMatch(t, []string{"app/b.yaml", "app/c.yaml", "app/d.yaml"}, filesOnServer(t, repo, second.Commit))

		// b.yaml came with the first fetch, d.yaml was pushed: both are read
		// back through one fetch of the head.
		content, err := client.Blob(ctx, entries[1].BlobID)
		require.NoError(t, err)
		require.Equal(t, "b\n", string(content))
		content, err = client.Blob(ctx, second.Blobs["app/d.yaml"])
		require.NoError(t, err)
		require.Equal(t, "d\n", string(content))
		require.Equal(t, 2, client.fetches)
	})
}

// ReleaseBlobs keeps what a commit builds on and what Tree lists: only a
// Blob fetches again.
func TestReleasedBlobsAreFetchedAgainOnlyWhenRead(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		client, repo, head, _ := loadedApp(t, r)
		ctx := testContext(t)

		client.ReleaseBlobs()
		require.Zero(t, blobsInStore(t, client))
		entries, err := client.Tree(ctx, head, "app")
		require.NoError(t, err)
		require.Equal(t, []string{"app/a.yaml", "app/b.yaml"}, treePaths(entries))
		res, err := client.Commit(ctx, commitRequest("main", head, "add", put("app/c.yaml", "c\n")))
		require.NoError(t, err)
		require.Equal(t, 1, client.fetches, "the trees are enough to list and to commit")
		require.ElementsMatch(t, []string{"app/a.yaml", "app/b.yaml", "app/c.yaml"}, filesOnServer(t, repo, res.Commit))

		content, err := client.Blob(ctx, entries[0].BlobID)
		require.NoError(t, err)
		require.Equal(t, "a\n", string(content))
		require.Equal(t, 2, client.fetches, "one fetch brings the released blobs back")
		content, err = client.Blob(ctx, entries[1].BlobID)
		require.NoError(t, err)
		require.Equal(t, "b\n", string(content))
		require.Equal(t, 2, client.fetches)
	})
}
