package gitea

import (
	"fmt"
	"net/http"
	"testing"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// TestTreeReadsEveryPage lowers the page size so the recursive tree spans
// several pages (Gitea counts directories as entries too).
func TestTreeReadsEveryPage(t *testing.T) {
	t.Parallel()
	seed := map[string]string{}
	for i := range 12 {
		seed[fmt.Sprintf("apps/app-%d/config-%02d.yaml", i%3, i)] = fmt.Sprintf("n: %d\n", i)
	}
	seed["apps-old/legacy.yaml"] = "legacy: true\n"
	seed["top.yaml"] = "top: true\n"
	repo := createRepo(t, "paging", seed)
	client, counter := newCountingClient(t, repo)
	client.treePageSize = 4
	ctx := testContext(t)
	head := sdkHead(t, repo, "main")

	entries, err := client.Tree(ctx, head, "")
	require.NoError(t, err)
	// 14 files and 5 directories (apps, apps/app-0..2, apps-old): 19
	// entries, 5 pages of 4.
	require.Len(t, counter.take(), 5)
	got := map[string]string{}
	for _, entry := range entries {
		require.Equal(t, forges.ModeRegular, entry.Mode)
		got[entry.Path] = entry.BlobID
	}
	want := map[string]string{}
	for path, content := range seed {
		want[path] = gitfile.BlobID([]byte(content), head)
	}
	require.Equal(t, want, got)

	below, err := client.Tree(ctx, head, "./apps/")
	require.NoError(t, err)
	require.Len(t, below, 12, "apps-old is not below apps")
	counter.take()
	one, err := client.Tree(ctx, head, "apps/app-1")
	require.NoError(t, err)
	require.Len(t, one, 4)
	for _, entry := range one {
		require.Equal(t, want[entry.Path], entry.BlobID, "paths below a subtree keep the prefix: %s", entry.Path)
	}
	require.Len(t, counter.take(), 4, "the first page holds none of it: one listing per segment of the prefix, one page of its subtree")
	early, err := client.Tree(ctx, head, "apps/app-0")
	require.NoError(t, err)
	require.Len(t, early, 4)
	require.Len(t, counter.take(), 3, "the prefix starts on the first page: reading stops where its run ends, on page 3 of 5")
	none, err := client.Tree(ctx, head, "top.yaml")
	require.NoError(t, err)
	require.Empty(t, none, "a file is not a directory")
}

// TestHeadMatchesBranchNamesExactly: GET git/refs/heads/X matches by
// prefix in Gitea; Head must not.
func TestHeadMatchesBranchNamesExactly(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "exact", map[string]string{"a.yaml": "a: 1\n"})
	_, resp, err := server.Client().CreateBranch(server.AdminUser(), repo, gitea.CreateBranchOption{BranchName: "release-1", OldBranchName: "main"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	client := newClient(t, repo, server.Token())
	ctx := testContext(t)

	_, err = client.Head(ctx, "release")
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = client.Head(ctx, "releas")
	require.ErrorIs(t, err, forges.ErrNotFound)
	head, err := client.Head(ctx, "release-1")
	require.NoError(t, err)
	require.Equal(t, sdkHead(t, repo, "main"), head)
}

func TestHeadOfEmptyAndMissingRepositories(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	empty := createRepo(t, "empty", nil)
	_, err := newClient(t, empty, server.Token()).Head(ctx, "main")
	require.ErrorIs(t, err, forges.ErrEmptyRepository)
	_, err = newClient(t, empty+"-missing", server.Token()).Head(ctx, "main")
	require.ErrorIs(t, err, forges.ErrNotFound)
}

// TestMissingObjects: Gitea answers 400 for a tree or blob object that
// does not exist ("sha not found", "object does not exist"); the client
// reports not found. Ids that are not full object ids are refused without
// a request, so Gitea never resolves them as branch names.
func TestMissingObjects(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "missing", map[string]string{"a.yaml": "a: 1\n"})
	client, counter := newCountingClient(t, repo)
	ctx := testContext(t)
	missing := "1234567890123456789012345678901234567890"

	_, err := client.Tree(ctx, missing, "")
	require.ErrorIs(t, err, forges.ErrNotFound)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	_, err = client.Blob(ctx, missing)
	require.ErrorIs(t, err, forges.ErrNotFound)
	require.Len(t, counter.take(), 2)

	_, err = client.Tree(ctx, "main", "")
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = client.Blob(ctx, "HEAD")
	require.ErrorIs(t, err, forges.ErrNotFound)
	require.Empty(t, counter.take())
}

func TestBlobRoundTrip(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "blob", map[string]string{"a.yaml": "a: 1\n", "empty.yaml": ""})
	client := newClient(t, repo, server.Token())
	ctx := testContext(t)
	entries, err := client.Tree(ctx, sdkHead(t, repo, "main"), "")
	require.NoError(t, err)
	require.Len(t, entries, 2)
	for _, entry := range entries {
		content, err := client.Blob(ctx, entry.BlobID)
		require.NoError(t, err)
		want, _ := fileAt(t, repo, "main", entry.Path)
		require.Equal(t, want, string(content))
	}
}
