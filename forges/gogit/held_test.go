package gogit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/gitfile"
)

// similarFiles are n files alike enough, and large enough, that the
// server's pack sends most of them as deltas on one another.
func similarFiles(n int) map[string]string {
	files := map[string]string{}
	body := strings.Repeat("  key: a value long enough to be worth a delta\n", 40)
	for i := range n {
		files[fmt.Sprintf("app/cm-%02d.yaml", i)] = fmt.Sprintf("name: cm-%02d\ndata:\n%s", i, body)
	}
	return files
}

// A fetch while the caller holds some blobs stores none of them, resolves
// the deltas the pack builds on them from the holder, and keeps the blobs
// the caller does not hold for the reads that follow; ReleaseBlobs then
// drops those too.
func TestAFetchWhileBlobsAreHeldKeepsNoneOfThem(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		files := similarFiles(12)
		repo, head := createRepo(t, files)
		client := newClient(t, r, repo)
		ctx := testContext(t)

		held := map[string][]byte{}
		for path, content := range files {
			if path != "app/cm-03.yaml" && path != "app/cm-07.yaml" {
				held[gitfile.BlobID([]byte(content), head)] = []byte(content)
			}
		}
		asked := 0
		client.HoldBlobs(func(id string) ([]byte, bool) {
			asked++
			content, ok := held[id]
			return content, ok
		})
		entries, err := client.Tree(ctx, head, "app")
		require.NoError(t, err)
		require.Len(t, entries, 12)
		// A server that allows filters sent no blob: the first Blob
		// fetches the snapshot again, whole, through the holder.
		loads := 1
		if r.filters {
			require.Zero(t, blobsInStore(t, client))
			loads = 2
		} else {
			require.Equal(t, 2, blobsInStore(t, client), "only the blobs the caller does not hold are kept")
			require.NotZero(t, asked)
		}

		for _, e := range entries {
			if _, ok := held[e.BlobID]; ok {
				continue
			}
			content, err := client.Blob(ctx, e.BlobID)
			require.NoError(t, err)
			require.Equal(t, files[e.Path], string(content))
			require.Equal(t, len(content), cap(content), "a blob read is kept: it comes at its size")
		}
		client.HoldBlobs(nil)
		require.Equal(t, 2, blobsInStore(t, client), "only the blobs the caller does not hold are kept")
		require.NotZero(t, asked)
		require.Equal(t, loads, client.fetches, "the blobs not held are read from one fetch")
		client.ReleaseBlobs()
		require.Zero(t, blobsInStore(t, client), "a release drops what the partial snapshot brought")

		// The snapshot counts as released: a commit builds on its trees,
		// and a held blob read later is fetched again, whole.
		res, err := client.Commit(ctx, commitRequest("main", head, "add", put("app/new.yaml", "new\n")))
		require.NoError(t, err)
		require.Equal(t, loads, client.fetches)
		require.Contains(t, filesOnServer(t, repo, res.Commit), "app/new.yaml")
		content, err := client.Blob(ctx, entries[0].BlobID)
		require.NoError(t, err)
		require.Equal(t, files[entries[0].Path], string(content))
		require.Equal(t, loads+1, client.fetches)
	})
}
