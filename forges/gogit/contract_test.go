package gogit

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/configbutler/gitops-reverser/test/gitverify"
)

// TestForgeContract runs the shared forge contract against a real git
// server over HTTP with basic auth; the server allows object filters, so
// the client fetches trees without their blobs and blobs when read.
func TestForgeContract(t *testing.T) {
	forgetest.Run(t, gitFixture{server: shared}, forgetest.Options{})
}

// TestForgeContractWithoutFilters runs it against a server that does not
// allow filters (git's default): every fetch brings the whole snapshot.
func TestForgeContractWithoutFilters(t *testing.T) {
	forgetest.Run(t, gitFixture{server: withoutFilters}, forgetest.Options{})
}

type gitFixture struct{ server *testServer }

func (f gitFixture) NewRepo(t *testing.T, name string, seed map[string]string) forgetest.Repo {
	server := f.server
	repo := repoName(t, name)
	var err error
	if seed == nil {
		_, err = server.CreateBareRepo(repo)
	} else {
		_, err = server.CreateRepoWithCommit(repo, seed)
	}
	require.NoError(t, err)
	client, err := New(Options{URL: server.HTTPURL(repo), Auth: BasicAuth{Username: testHTTPUser, Password: testHTTPPassword}})
	require.NoError(t, err)
	wrong, err := New(Options{URL: server.HTTPURL(repo), Auth: BasicAuth{Username: testHTTPUser, Password: "wrong"}})
	require.NoError(t, err)
	return forgetest.Repo{
		Forge:            client,
		WrongCredentials: wrong,
		File: func(t *testing.T, branch, path string) (string, bool) {
			out, err := server.ReadFile(repo, branch, path)
			return out, err == nil
		},
		Head: func(t *testing.T, branch string) forgetest.Commit { return headCommit(t, server, repo, branch) },
		CommitObject: func(t *testing.T, id string) []byte {
			return gitverify.CatCommit(t, server.RepoPath(repo), id)
		},
		ExternalCommit: func(t *testing.T, branch, path, content string) {
			_, err := server.CommitFilesOn(repo, branch, map[string]string{path: content}, "external edit")
			require.NoError(t, err)
		},
	}
}

func headCommit(t *testing.T, server *testServer, repo, branch string) forgetest.Commit {
	out, err := server.Git(repo, "log", "-1", "--format=%H%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%P%x00%B", branch)
	require.NoError(t, err)
	f := strings.SplitN(out, "\x00", 9)
	require.Len(t, f, 9)
	parse := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return ts
	}
	return forgetest.Commit{ID: f[0], AuthorName: f[1], AuthorEmail: f[2], AuthorDate: parse(f[3]),
		CommitterName: f[4], CommitterEmail: f[5], CommitterDate: parse(f[6]), Parents: strings.Fields(f[7]), Message: f[8]}
}
