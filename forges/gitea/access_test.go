package gitea

import (
	"net/http"
	"testing"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

// TestTokenWithoutWriteAccess uses the token of a second user who is not a
// collaborator. What Gitea 1.27 answers (routers/api/v1/api.go and
// repo/file.go; observed on the harness server):
//   - a public repository can be read by anyone, so reads succeed;
//     ChangeFiles answers 403 "user should have a permission to write to
//     the target branch", so Commit is ErrForbidden; the repository lists
//     permissions.push false, so Probe is ErrForbidden too;
//   - a private repository is hidden from a user who cannot read it: every
//     request answers 404 "not found", so Head, Commit and Probe are
//     ErrNotFound, never Forbidden.
func TestTokenWithoutWriteAccess(t *testing.T) {
	t.Parallel()
	outsiderToken, err := server.CreateUser(uniqueUser("outsider"))
	require.NoError(t, err)
	ctx := testContext(t)

	t.Run("PublicRepository", func(t *testing.T) {
		repo := createRepo(t, "public", map[string]string{"a.yaml": "a: 1\n"})
		outsider := newClient(t, repo, outsiderToken)
		head, err := outsider.Head(ctx, "main")
		require.NoError(t, err, "a public repository can be read")
		_, err = outsider.Commit(ctx, commitRequest(head, "outsider\n", put("b.yaml", "b: 1\n")))
		require.ErrorIs(t, err, forges.ErrForbidden)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusForbidden, apiErr.StatusCode)
		require.Contains(t, apiErr.Message, "permission to write")
		require.ErrorIs(t, outsider.Probe(ctx), forges.ErrForbidden)
		require.Equal(t, head, sdkHead(t, repo, "main"))
		require.Equal(t, []string{"main"}, branches(t, repo), "a refused commit leaves no scratch branch")
	})

	t.Run("PrivateRepository", func(t *testing.T) {
		created, resp, err := server.Client().CreateRepo(gitea.CreateRepoOption{
			Name: uniqueName(t, "private"), Private: true, AutoInit: true, DefaultBranch: "main",
		})
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		outsider := newClient(t, created.Name, outsiderToken)
		_, err = outsider.Head(ctx, "main")
		require.ErrorIs(t, err, forges.ErrNotFound)
		_, err = outsider.Commit(ctx, commitRequest(sdkHead(t, created.Name, "main"), "outsider\n", put("b.yaml", "b: 1\n")))
		require.ErrorIs(t, err, forges.ErrNotFound)
		require.ErrorIs(t, outsider.Probe(ctx), forges.ErrNotFound)
	})

	t.Run("Collaborator", func(t *testing.T) {
		repo := createRepo(t, "collaborator", map[string]string{"a.yaml": "a: 1\n"})
		name := uniqueUser("writer")
		writerToken, err := server.CreateUser(name)
		require.NoError(t, err)
		write := gitea.AccessModeWrite
		resp, err := server.Client().AddCollaborator(server.AdminUser(), repo, name, gitea.AddCollaboratorOption{Permission: &write})
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		writer := newClient(t, repo, writerToken)
		require.NoError(t, writer.Probe(ctx))
		_, err = writer.Commit(ctx, commitRequest(sdkHead(t, repo, "main"), "collaborator\n", put("b.yaml", "b: 1\n")))
		require.NoError(t, err, "write access is enough: the scratch branch needs no more")
		require.Equal(t, []string{"main"}, branches(t, repo), "and a writer may delete it")
	})
}

// TestProbe covers the answers Probe maps: a working token, a token Gitea
// does not know (401 "invalid username, password or token"), no token on
// a public repository (readable, not writable), a missing repository.
func TestProbe(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "probe", map[string]string{"a.yaml": "a: 1\n"})
	ctx := testContext(t)
	require.NoError(t, newClient(t, repo, server.Token()).Probe(ctx))
	require.ErrorIs(t, newClient(t, repo, "wrong").Probe(ctx), forges.ErrUnauthorized)
	require.ErrorIs(t, newClient(t, repo, "").Probe(ctx), forges.ErrForbidden)
	require.ErrorIs(t, newClient(t, repo+"-missing", server.Token()).Probe(ctx), forges.ErrNotFound)
}
