package gitea

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// server is the one real Gitea every test in the package uses, each test
// on repositories of its own. TestMain sets it before any test runs and no
// test changes it.
var server *harness.Gitea

func TestMain(m *testing.M) {
	os.Exit(runWithGitea(m))
}

func runWithGitea(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gitea-forge-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating the gitea directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	started, err := harness.StartGitea(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting gitea:", err)
		return 1
	}
	defer started.Stop()
	server = started
	return m.Run()
}

// TestForgeContract runs the shared forge contract against the real Gitea.
func TestForgeContract(t *testing.T) {
	t.Parallel()
	// Gitea's API takes no signature (it signs with the instance's key).
	forgetest.Run(t, giteaFixture{}, forgetest.Options{RefusesSigner: true})
}

// TestForgeContractThroughPush runs it again with the commits pushed over
// Gitea's smart HTTP (Options.Pusher), as the operator configures the
// client: the same guarantees, through the other path.
func TestForgeContractThroughPush(t *testing.T) {
	t.Parallel()
	forgetest.Run(t, giteaFixture{push: true}, forgetest.Options{RefusesSigner: true})
}

// giteaFixture makes repositories with the SDK as the administrator and
// observes them through the SDK, never through the client under test.
// With push, the clients commit through a git push.
type giteaFixture struct{ push bool }

func (f giteaFixture) NewRepo(t *testing.T, name string, seed map[string]string) forgetest.Repo {
	return f.repoOn(t, createRepo(t, name, seed))
}

// repoOn is the contract's view of repo: clients under test, and the SDK
// as the independent observer and the other writer.
func (f giteaFixture) repoOn(t *testing.T, repo string) forgetest.Repo {
	client := newClient
	if f.push {
		client = newPushingClient
	}
	return forgetest.Repo{
		Forge:            client(t, repo, server.Token()),
		WrongCredentials: client(t, repo, "not-a-token-gitea-issued"),
		File: func(t *testing.T, branch, path string) (string, bool) {
			return fileAt(t, repo, branch, path)
		},
		Head: func(t *testing.T, branch string) forgetest.Commit {
			return describeCommit(t, repo, sdkHead(t, repo, branch))
		},
		ExternalCommit: func(t *testing.T, branch, path, content string) {
			externalCommit(t, repo, branch, map[string]string{path: content})
		},
	}
}

// describeCommit reads a commit with the SDK. Gitea reports dates as
// RFC 3339 strings.
func describeCommit(t *testing.T, repo, sha string) forgetest.Commit {
	t.Helper()
	commit, resp, err := server.Client().GetSingleCommit(server.AdminUser(), repo, sha)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parse := func(value string) time.Time {
		parsed, err := time.Parse(time.RFC3339, value)
		require.NoError(t, err)
		return parsed
	}
	parents := make([]string, 0, len(commit.Parents))
	for _, parent := range commit.Parents {
		parents = append(parents, parent.SHA)
	}
	described := commit.RepoCommit
	return forgetest.Commit{
		ID:             commit.SHA,
		Message:        described.Message,
		AuthorName:     described.Author.Name,
		AuthorEmail:    described.Author.Email,
		AuthorDate:     parse(described.Author.Date),
		CommitterName:  described.Committer.Name,
		CommitterEmail: described.Committer.Email,
		CommitterDate:  parse(described.Committer.Date),
		Parents:        parents,
	}
}

// externalCommit writes files to branch as another writer would: through
// the SDK, with "upload" (create or overwrite), no sha and no head check.
func externalCommit(t *testing.T, repo, branch string, files map[string]string) string {
	t.Helper()
	operations := make([]*gitea.ChangeFileOperation, 0, len(files))
	for path, content := range files {
		operations = append(operations, &gitea.ChangeFileOperation{Operation: "upload", Path: path, Content: encode(content)})
	}
	created, resp, err := server.Client().ChangeFiles(server.AdminUser(), repo, gitea.ChangeFilesOptions{
		Branch: branch, Message: "external edit", Files: operations,
		Author: gitea.Identity{Name: "Other Writer", Email: "other@example.com"},
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	return created.Commit.SHA
}
