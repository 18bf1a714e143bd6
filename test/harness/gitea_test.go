package harness

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"net"
	"net/http"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

func TestGitea(t *testing.T) {
	started := time.Now()
	server, err := StartGitea(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	t.Logf("gitea ready at %s (ssh port %d) in %s", server.URL(), server.SSHPort(), time.Since(started))

	t.Run("ChangeFilesWritesSeveralFilesInOneCommit", func(t *testing.T) {
		testChangeFilesWritesSeveralFilesInOneCommit(t, server)
	})
	t.Run("ChangeFilesRefusesUpdateWithWrongBlobSHA", func(t *testing.T) {
		testChangeFilesRefusesUpdateWithWrongBlobSHA(t, server)
	})
	t.Run("CreateUserGivesWorkingToken", func(t *testing.T) {
		testCreateUserGivesWorkingToken(t, server)
	})
	t.Run("SSHServerPresentsHostKey", func(t *testing.T) {
		testSSHServerPresentsHostKey(t, server)
	})
}

func testChangeFilesWritesSeveralFilesInOneCommit(t *testing.T, server *Gitea) {
	client := server.Client()
	owner := server.AdminUser()
	repo, err := server.CreateRepo("several-files", true)
	require.NoError(t, err)
	require.Equal(t, "main", repo.DefaultBranch)

	seedFiles(t, server, repo.Name, map[string]string{
		"seed/update-me.yaml": "replicas: 1\n",
		"seed/delete-me.yaml": "kind: ConfigMap\n",
	})
	toUpdate := getContents(t, server, repo.Name, "seed/update-me.yaml")
	toDelete := getContents(t, server, repo.Name, "seed/delete-me.yaml")
	headBefore := branchHead(t, server, repo.Name, "main")
	commitsBefore := countCommits(t, server, repo.Name)

	authorDate := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	committerDate := time.Date(2024, 1, 2, 3, 5, 0, 0, time.UTC)
	written := map[string]string{
		"clusters/prod/apps/web/deployment.yaml": "kind: Deployment\n",
		"clusters/prod/namespace.yaml":           "kind: Namespace\n",
		"clusters/prod/apps/web/service.yaml":    "kind: Service\n",
		"seed/update-me.yaml":                    "replicas: 3\n",
	}
	started := time.Now()
	result, resp, err := client.ChangeFiles(owner, repo.Name, gitea.ChangeFilesOptions{
		Message:   "mirror: five changes",
		Branch:    "main",
		Author:    gitea.Identity{Name: "Alice Actor", Email: "alice@example.com"},
		Committer: gitea.Identity{Name: "gitops-reverser", Email: "bot@example.com"},
		Dates:     gitea.CommitDateOptions{Author: authorDate, Committer: committerDate},
		Files: []*gitea.ChangeFileOperation{
			createOp("clusters/prod/apps/web/deployment.yaml", written["clusters/prod/apps/web/deployment.yaml"]),
			createOp("clusters/prod/namespace.yaml", written["clusters/prod/namespace.yaml"]),
			createOp("clusters/prod/apps/web/service.yaml", written["clusters/prod/apps/web/service.yaml"]),
			{Operation: "update", Path: "seed/update-me.yaml", SHA: toUpdate.SHA,
				Content: base64.StdEncoding.EncodeToString([]byte(written["seed/update-me.yaml"]))},
			{Operation: "delete", Path: "seed/delete-me.yaml", SHA: toDelete.SHA},
		},
	})
	require.NoError(t, checkGiteaResponse(resp, err, http.StatusCreated))
	t.Logf("ChangeFiles with 5 operations took %s", time.Since(started))
	require.NotNil(t, result.Commit)
	require.Len(t, result.Commit.Parents, 1)
	require.Equal(t, headBefore, result.Commit.Parents[0].SHA, "the commit must sit on the head it was made against")

	require.Equal(t, result.Commit.SHA, branchHead(t, server, repo.Name, "main"))
	require.Equal(t, commitsBefore+1, countCommits(t, server, repo.Name), "all changes must land in one commit")

	for path, content := range written {
		raw, resp, err := client.GetFile(owner, repo.Name, "main", path)
		require.NoError(t, checkGiteaResponse(resp, err, http.StatusOK), path)
		require.Equal(t, content, string(raw), path)
	}
	_, resp, err = client.GetContents(owner, repo.Name, "main", "seed/delete-me.yaml")
	require.Error(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the deleted file must be gone")

	commit, resp, err := client.GetSingleCommit(owner, repo.Name, result.Commit.SHA)
	require.NoError(t, checkGiteaResponse(resp, err, http.StatusOK))
	require.Equal(t, "mirror: five changes", trimNewline([]byte(commit.RepoCommit.Message)))
	requireCommitUser(t, commit.RepoCommit.Author, "Alice Actor", "alice@example.com", authorDate)
	requireCommitUser(t, commit.RepoCommit.Committer, "gitops-reverser", "bot@example.com", committerDate)
}

func testChangeFilesRefusesUpdateWithWrongBlobSHA(t *testing.T, server *Gitea) {
	repo, err := server.CreateRepo("wrong-sha", true)
	require.NoError(t, err)
	seedFiles(t, server, repo.Name, map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n"})
	other := getContents(t, server, repo.Name, "b.yaml")
	headBefore := branchHead(t, server, repo.Name, "main")

	_, resp, err := server.Client().ChangeFiles(server.AdminUser(), repo.Name, gitea.ChangeFilesOptions{
		Message: "stale update",
		Branch:  "main",
		Files: []*gitea.ChangeFileOperation{
			// A real blob, but not the one at a.yaml: what a writer holding
			// a stale view would send.
			{Operation: "update", Path: "a.yaml", SHA: other.SHA,
				Content: base64.StdEncoding.EncodeToString([]byte("a: 2\n"))},
		},
	})
	require.Error(t, err)
	require.NotNil(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "error: %v", err)
	t.Logf("wrong sha refused with %d: %v", resp.StatusCode, err)
	require.Equal(t, headBefore, branchHead(t, server, repo.Name, "main"), "a refused change must not move the branch")
}

func testCreateUserGivesWorkingToken(t *testing.T, server *Gitea) {
	token, err := server.CreateUser("second-identity")
	require.NoError(t, err)
	require.NotEmpty(t, token)
	asUser, err := server.NewClient(token)
	require.NoError(t, err)
	me, resp, err := asUser.GetMyUserInfo()
	require.NoError(t, checkGiteaResponse(resp, err, http.StatusOK))
	require.Equal(t, "second-identity", me.UserName)
	require.False(t, me.IsAdmin)
}

// testSSHServerPresentsHostKey completes an SSH handshake far enough to
// check the host key; authentication then fails, as no key is registered.
func testSSHServerPresentsHostKey(t *testing.T, server *Gitea) {
	_, signer, err := newTestSSHKey()
	require.NoError(t, err)
	hostKeyChecked := false
	config := &ssh.ClientConfig{
		User: "git",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: func(hostname string, remote net.Addr, key ssh.PublicKey) error {
			hostKeyChecked = true
			return ssh.FixedHostKey(server.SSHHostKey())(hostname, remote, key)
		},
		Timeout: 10 * time.Second,
	}
	conn, err := ssh.Dial("tcp", loopbackAddr(server.SSHPort()), config)
	if conn != nil {
		conn.Close()
	}
	require.True(t, hostKeyChecked, "handshake did not reach the host key check: %v", err)
	require.Error(t, err, "an unregistered key must not authenticate")
	require.Contains(t, err.Error(), "unable to authenticate")
	require.Contains(t, server.SSHURL("o", "r"), "ssh://git@127.0.0.1:")
}

func createOp(path, content string) *gitea.ChangeFileOperation {
	return &gitea.ChangeFileOperation{
		Operation: "create", Path: path,
		Content: base64.StdEncoding.EncodeToString([]byte(content)),
	}
}

func seedFiles(t *testing.T, server *Gitea, repo string, files map[string]string) {
	t.Helper()
	var ops []*gitea.ChangeFileOperation
	for path, content := range files {
		ops = append(ops, createOp(path, content))
	}
	_, resp, err := server.Client().ChangeFiles(server.AdminUser(), repo, gitea.ChangeFilesOptions{
		Message: "seed", Branch: "main", Files: ops,
	})
	require.NoError(t, checkGiteaResponse(resp, err, http.StatusCreated))
}

func getContents(t *testing.T, server *Gitea, repo, path string) *gitea.ContentsResponse {
	t.Helper()
	contents, resp, err := server.Client().GetContents(server.AdminUser(), repo, "main", path)
	require.NoError(t, checkGiteaResponse(resp, err, http.StatusOK), path)
	return contents
}

func branchHead(t *testing.T, server *Gitea, repo, branch string) string {
	t.Helper()
	b, resp, err := server.Client().GetRepoBranch(server.AdminUser(), repo, branch)
	require.NoError(t, checkGiteaResponse(resp, err, http.StatusOK))
	return b.Commit.ID
}

func countCommits(t *testing.T, server *Gitea, repo string) int {
	t.Helper()
	commits, resp, err := server.Client().ListRepoCommits(server.AdminUser(), repo, gitea.ListCommitOptions{
		ListOptions: gitea.ListOptions{PageSize: 50}, SHA: "main",
	})
	require.NoError(t, checkGiteaResponse(resp, err, http.StatusOK))
	return len(commits)
}

func requireCommitUser(t *testing.T, got *gitea.CommitUser, name, email string, date time.Time) {
	t.Helper()
	require.NotNil(t, got)
	require.Equal(t, name, got.Name)
	require.Equal(t, email, got.Email)
	parsed, err := time.Parse(time.RFC3339, got.Date)
	require.NoError(t, err)
	require.True(t, date.Equal(parsed), "date %s, want %s", got.Date, date)
}

func newTestSSHKey() (ssh.PublicKey, ssh.Signer, error) {
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	signer, err := ssh.NewSignerFromKey(private)
	if err != nil {
		return nil, nil, err
	}
	return signer.PublicKey(), signer, nil
}
