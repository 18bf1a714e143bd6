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
// server over HTTP with basic auth.
func TestForgeContract(t *testing.T) {
	forgetest.Run(t, gitFixture{}, forgetest.Options{})
}

type gitFixture struct{}

func (gitFixture) NewRepo(t *testing.T, name string, seed map[string]string) forgetest.Repo {
	repo := repoName(t, name)
	var err error
	if seed == nil {
		_, err = shared.CreateBareRepo(repo)
	} else {
		_, err = shared.CreateRepoWithCommit(repo, seed)
	}
	require.NoError(t, err)
	client, err := New(Options{URL: shared.HTTPURL(repo), Auth: BasicAuth{Username: testHTTPUser, Password: testHTTPPassword}})
	require.NoError(t, err)
	wrong, err := New(Options{URL: shared.HTTPURL(repo), Auth: BasicAuth{Username: testHTTPUser, Password: "wrong"}})
	require.NoError(t, err)
	return forgetest.Repo{
		Forge:            client,
		WrongCredentials: wrong,
		File: func(t *testing.T, branch, path string) (string, bool) {
			out, err := shared.ReadFile(repo, branch, path)
			return out, err == nil
		},
		Head: func(t *testing.T, branch string) forgetest.Commit { return headCommit(t, repo, branch) },
		CommitObject: func(t *testing.T, id string) []byte {
			return gitverify.CatCommit(t, shared.RepoPath(repo), id)
		},
		ExternalCommit: func(t *testing.T, branch, path, content string) {
			_, err := shared.CommitFilesOn(repo, branch, map[string]string{path: content}, "external edit")
			require.NoError(t, err)
		},
	}
}

func headCommit(t *testing.T, repo, branch string) forgetest.Commit {
	out, err := shared.Git(repo, "log", "-1", "--format=%H%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%P%x00%B", branch)
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
