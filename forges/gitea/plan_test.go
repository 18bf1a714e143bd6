package gitea

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

// TestBlobID compares with ids git itself prints (git hash-object, and
// git hash-object --object-format=sha256 for the empty blob).
func TestBlobID(t *testing.T) {
	require.Equal(t, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", blobID(nil, sha1HexLength))
	require.Equal(t, "ce013625030ba8dba906f756967f9e9ca394464a", blobID([]byte("hello\n"), sha1HexLength))
	require.Equal(t, "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813", blobID(nil, sha256HexLength))
}

func TestFinalChangesKeepTheLastChangePerPath(t *testing.T) {
	final, err := finalChanges([]forges.FileChange{put("a", "1"), put("b", "1"), del("a"), put("b", "2")})
	require.NoError(t, err)
	require.Equal(t, []forges.FileChange{del("a"), put("b", "2")}, final)

	for _, bad := range []string{"", "/abs", "a//b", "a/../b", "./a", ".git/config", "x/.GIT/y", "nul\x00"} {
		_, err := finalChanges([]forges.FileChange{put(bad, "x")})
		require.Error(t, err, "%q", bad)
	}
}

func TestCommonDirectory(t *testing.T) {
	require.Equal(t, "", commonDirectory(nil))
	require.Equal(t, "a/b", commonDirectory([]forges.FileChange{put("a/b/c.yaml", ""), del("a/b/d/e.yaml")}))
	require.Equal(t, "a", commonDirectory([]forges.FileChange{put("a/b/c.yaml", ""), put("a/bc/d.yaml", "")}),
		"whole segments: a/b is not a prefix of a/bc")
	require.Equal(t, "", commonDirectory([]forges.FileChange{put("a/b.yaml", ""), put("c.yaml", "")}))
}

func TestPlanOperations(t *testing.T) {
	base := map[string]forges.TreeEntry{
		"kept.yaml":    {Path: "kept.yaml", BlobID: "blob-kept"},
		"deleted.yaml": {Path: "deleted.yaml", BlobID: "blob-deleted"},
	}
	operations := planOperations([]forges.FileChange{
		put("kept.yaml", "new"), put("new.yaml", "fresh"), del("deleted.yaml"), del("never-existed.yaml"),
	}, base)
	require.Equal(t, []fileOperation{
		{Operation: "update", Path: "kept.yaml", SHA: "blob-kept", ContentBase64: base64.StdEncoding.EncodeToString([]byte("new"))},
		{Operation: "create", Path: "new.yaml", ContentBase64: base64.StdEncoding.EncodeToString([]byte("fresh"))},
		{Operation: "delete", Path: "deleted.yaml", SHA: "blob-deleted"},
	}, operations)
	require.NotNil(t, planOperations(nil, nil), "an empty list, not null: Gitea requires the files field")
}

func TestNewNormalisesTheBaseURL(t *testing.T) {
	for base, want := range map[string]string{
		"https://gitea.example.com":                "https://gitea.example.com",
		"https://gitea.example.com/":               "https://gitea.example.com",
		"https://gitea.example.com/api/v1":         "https://gitea.example.com",
		"http://127.0.0.1:3000/api/v1/":            "http://127.0.0.1:3000",
		"https://example.com/gitea/":               "https://example.com/gitea",
		"https://example.com/gitea/api/v1":         "https://example.com/gitea",
		" https://gitea.example.com:8443/prefix/ ": "https://gitea.example.com:8443/prefix",
	} {
		client, err := New(Options{BaseURL: base, Owner: "org", Repo: "repo.git"})
		require.NoError(t, err, base)
		require.Equal(t, want+"/api/v1", client.apiURL, base)
		require.Equal(t, want+"/org/repo/commit/abc123", client.CommitURL("abc123"), base)
	}
	for _, bad := range []Options{
		{BaseURL: "gitea.example.com", Owner: "o", Repo: "r"},
		{BaseURL: "ssh://git@gitea.example.com", Owner: "o", Repo: "r"},
		{BaseURL: "https://gitea.example.com?x=1", Owner: "o", Repo: "r"},
		{BaseURL: "https://gitea.example.com", Owner: "", Repo: "r"},
		{BaseURL: "https://gitea.example.com", Owner: "o", Repo: ".git"},
		{BaseURL: "https://gitea.example.com", Owner: "o/p", Repo: "r"},
	} {
		_, err := New(bad)
		require.Error(t, err, "%+v", bad)
	}
}

func TestCommitRequestsGiteaCannotServe(t *testing.T) {
	client, err := New(Options{BaseURL: "https://gitea.example.com", Owner: "o", Repo: "r"})
	require.NoError(t, err)
	ctx := testContext(t)
	_, err = client.Commit(ctx, forges.CommitRequest{Branch: "main", ExpectedHead: "1234567890123456789012345678901234567890", Signer: signerFunc(nil)})
	require.ErrorIs(t, err, forges.ErrSigningUnsupported)
	_, err = client.Commit(ctx, forges.CommitRequest{Branch: "main", ExpectedHead: "main"})
	require.ErrorContains(t, err, "not a full object id")
	_, err = client.Commit(ctx, forges.CommitRequest{ExpectedHead: "1234567890123456789012345678901234567890"})
	require.ErrorContains(t, err, "empty branch name")
}

type signerFunc func(payload []byte) ([]byte, error)

func (f signerFunc) Sign(payload []byte) ([]byte, error) { return f(payload) }
