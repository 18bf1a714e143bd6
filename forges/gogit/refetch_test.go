package gogit

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The branch worker reads the files it left pending all at once when a
// window needs them, after it let the snapshot's blobs go: the first Blob
// fetches the snapshot again and the others, waiting on it, read from that
// one fetch.
func TestConcurrentReadsOfAReleasedSnapshotFetchItOnce(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		files := similarFiles(12)
		repo, head := createRepo(t, files)
		client := newClient(t, r, repo)
		ctx := testContext(t)
		entries, err := client.Tree(ctx, head, "app")
		require.NoError(t, err)
		client.ReleaseBlobs()
		require.Zero(t, blobsInStore(t, client))

		contents := make([]string, len(entries))
		errs := make([]error, len(entries))
		var wg sync.WaitGroup
		for i, e := range entries {
			wg.Go(func() {
				content, err := client.Blob(ctx, e.BlobID)
				contents[i], errs[i] = string(content), err
			})
		}
		wg.Wait()
		for i, e := range entries {
			require.NoError(t, errs[i])
			require.Equal(t, files[e.Path], contents[i])
		}
		require.Equal(t, 2, client.fetches, "the listing's fetch, and one more for every read")
	})
}
