package gitea

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

func TestFinalChangesKeepTheLastChangePerPath(t *testing.T) {
	final, err := finalChanges([]gitfile.Change{put("a", "1"), put("b", "1"), del("a"), put("b", "2")})
	require.NoError(t, err)
	require.Equal(t, []gitfile.Change{del("a"), put("b", "2")}, final)

	for _, bad := range []string{"", "/abs", "a//b", "a/../b", "./a", ".git/config", "x/.GIT/y", "nul\x00"} {
		_, err := finalChanges([]gitfile.Change{put(bad, "x")})
		require.Error(t, err, "%q", bad)
	}
}

func TestPlanOperations(t *testing.T) {
	kept, deleted := put("kept.yaml", "new"), del("deleted.yaml")
	kept.BaseBlob, deleted.BaseBlob = "blob-kept", "blob-deleted"
	operations := planOperations([]gitfile.Change{kept, put("new.yaml", "fresh"), deleted, del("never-existed.yaml")})
	require.Equal(t, []fileOperation{
		{Operation: "update", Path: "kept.yaml", SHA: "blob-kept", ContentBase64: base64.StdEncoding.EncodeToString([]byte("new"))},
		{Operation: "create", Path: "new.yaml", ContentBase64: base64.StdEncoding.EncodeToString([]byte("fresh"))},
		{Operation: "delete", Path: "deleted.yaml", SHA: "blob-deleted"},
	}, operations, "create, update or delete and each sha come from the base blob")
	require.NotNil(t, planOperations(nil), "an empty list, not null: Gitea requires the files field")
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
