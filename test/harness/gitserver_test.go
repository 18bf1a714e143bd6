package harness

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

const (
	testHTTPUser     = "tester"
	testHTTPPassword = "correct-horse"
)

func TestGitServerPushOverHTTPIsVisibleOverSSHAndBack(t *testing.T) {
	t.Parallel()
	keyPEM, publicKey := generateTestSSHKey(t)
	server := startTestGitServer(t, GitServerOptions{
		HTTPUsername: testHTTPUser, HTTPPassword: testHTTPPassword,
		AuthorizedKeys: []ssh.PublicKey{publicKey},
	})
	initial, err := server.CreateRepoWithCommit("team/config", map[string]string{"README.md": "hello\n"})
	require.NoError(t, err)
	client := newGitCLIClient(t, server, keyPEM)

	overHTTP := client.clone(t, httpURLWithPassword(t, server, "team/config", testHTTPPassword))
	require.Equal(t, initial, client.mustRun(t, overHTTP, "rev-parse", "HEAD"))
	httpCommit := client.commitFile(t, overHTTP, "apps/app.yaml", "replicas: 1\n")
	client.mustRun(t, overHTTP, "push", "origin", "main")
	remoteMain, err := server.Git("team/config", "rev-parse", "refs/heads/main")
	require.NoError(t, err)
	require.Equal(t, httpCommit, remoteMain)

	overSSH := client.clone(t, server.SSHURL("team/config"))
	require.Equal(t, httpCommit, client.mustRun(t, overSSH, "rev-parse", "HEAD"))
	content, err := os.ReadFile(filepath.Join(overSSH, "apps", "app.yaml"))
	require.NoError(t, err)
	require.Equal(t, "replicas: 1\n", string(content))

	sshCommit := client.commitFile(t, overSSH, "apps/app.yaml", "replicas: 2\n")
	client.mustRun(t, overSSH, "push", "origin", "main")
	pushed, err := server.ReadFile("team/config", "refs/heads/main", "apps/app.yaml")
	require.NoError(t, err)
	require.Equal(t, "replicas: 2\n", pushed)

	client.mustRun(t, overHTTP, "pull", "--ff-only", "origin", "main")
	require.Equal(t, sshCommit, client.mustRun(t, overHTTP, "rev-parse", "HEAD"))
	history, err := server.Git("team/config", "rev-list", "--count", "refs/heads/main")
	require.NoError(t, err)
	require.Equal(t, "3", history)
	overFile := client.mustRun(t, "", "ls-remote", server.FileURL("team/config"), "refs/heads/main")
	require.Equal(t, sshCommit+"\trefs/heads/main", overFile)
}

func TestGitServerRefusesWrongHTTPPassword(t *testing.T) {
	t.Parallel()
	server := startTestGitServer(t, GitServerOptions{HTTPUsername: testHTTPUser, HTTPPassword: testHTTPPassword})
	_, err := server.CreateRepoWithCommit("repo", map[string]string{"README.md": "hello\n"})
	require.NoError(t, err)
	client := newGitCLIClient(t, server, nil)

	out, err := client.run(t, "", "ls-remote", httpURLWithPassword(t, server, "repo", "wrong-password"))
	require.Error(t, err)
	require.Contains(t, out, "Authentication failed")
	out, err = client.run(t, "", "ls-remote", server.HTTPURL("repo"))
	require.Error(t, err, "a request without credentials must be refused too")
	require.Contains(t, out, "could not read Username", "git should have been challenged for credentials")

	resp, err := http.Get(server.HTTPURL("repo") + "/info/refs?service=git-upload-pack")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, `Basic realm="git"`, resp.Header.Get("WWW-Authenticate"))

	client.mustRun(t, "", "ls-remote", httpURLWithPassword(t, server, "repo", testHTTPPassword))
}

func TestGitServerRefusesUnknownSSHKey(t *testing.T) {
	t.Parallel()
	_, authorizedKey := generateTestSSHKey(t)
	strangerPEM, strangerKey := generateTestSSHKey(t)
	server := startTestGitServer(t, GitServerOptions{AuthorizedKeys: []ssh.PublicKey{authorizedKey}})
	_, err := server.CreateRepoWithCommit("repo", map[string]string{"README.md": "hello\n"})
	require.NoError(t, err)
	client := newGitCLIClient(t, server, strangerPEM)

	out, err := client.run(t, "", "ls-remote", server.SSHURL("repo"))
	require.Error(t, err)
	require.Contains(t, out, "Permission denied (publickey)")

	// The same client gets in once its key is authorized, so the refusal
	// above was about the key and nothing else.
	server.AuthorizeSSHKey(strangerKey)
	client.mustRun(t, "", "ls-remote", server.SSHURL("repo"))
}

func TestGitServerRefusesStalePushAsNonFastForward(t *testing.T) {
	t.Parallel()
	server := startTestGitServer(t, GitServerOptions{}) // anonymous HTTP
	_, err := server.CreateRepoWithCommit("repo", map[string]string{"README.md": "hello\n"})
	require.NoError(t, err)
	client := newGitCLIClient(t, server, nil)
	first := client.clone(t, server.HTTPURL("repo"))
	second := client.clone(t, server.HTTPURL("repo"))

	winner := client.commitFile(t, first, "a.txt", "first\n")
	client.mustRun(t, first, "push", "origin", "main")
	client.commitFile(t, second, "b.txt", "second\n")
	client.mustRun(t, second, "fetch", "origin")
	out, err := client.run(t, second, "push", "origin", "main")
	require.Error(t, err)
	require.Contains(t, out, "non-fast-forward")
	remoteMain, err := server.Git("repo", "rev-parse", "refs/heads/main")
	require.NoError(t, err)
	require.Equal(t, winner, remoteMain, "the stale push must not have moved main")

	// Without DenyNonFastForwards the remote is a plain git remote: a
	// forced push is the client's call.
	client.mustRun(t, second, "push", "--force", "origin", "main")
}

func TestGitServerDenyNonFastForwardsRefusesForcedPush(t *testing.T) {
	t.Parallel()
	keyPEM, publicKey := generateTestSSHKey(t)
	server := startTestGitServer(t, GitServerOptions{
		AuthorizedKeys: []ssh.PublicKey{publicKey}, DenyNonFastForwards: true,
	})
	_, err := server.CreateRepoWithCommit("repo", map[string]string{"README.md": "hello\n"})
	require.NoError(t, err)
	client := newGitCLIClient(t, server, keyPEM)
	first := client.clone(t, server.HTTPURL("repo"))
	winner := client.commitFile(t, first, "a.txt", "first\n")
	client.mustRun(t, first, "push", "origin", "main")

	for name, remoteURL := range map[string]string{"http": server.HTTPURL("repo"), "ssh": server.SSHURL("repo")} {
		stale := client.clone(t, remoteURL)
		client.mustRun(t, stale, "reset", "--hard", "HEAD~1")
		client.commitFile(t, stale, "b.txt", "second\n")
		out, err := client.run(t, stale, "push", "--force", "origin", "main")
		require.Error(t, err, name)
		require.Contains(t, out, "remote rejected", name)
		require.Contains(t, out, "non-fast-forward", name)
	}
	remoteMain, err := server.Git("repo", "rev-parse", "refs/heads/main")
	require.NoError(t, err)
	require.Equal(t, winner, remoteMain)
}

func TestGitServerLargePushOverHTTP(t *testing.T) {
	t.Parallel()
	server := startTestGitServer(t, GitServerOptions{HTTPUsername: testHTTPUser, HTTPPassword: testHTTPPassword})
	_, err := server.CreateBareRepo("repo")
	require.NoError(t, err)
	client := newGitCLIClient(t, server, nil)
	work := client.clone(t, httpURLWithPassword(t, server, "repo", testHTTPPassword))

	// Incompressible and above http.postBuffer (1 MiB), so git sends the
	// pack with a chunked request body.
	blob := make([]byte, 3<<20)
	_, err = rand.Read(blob)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(work, "blob.bin"), blob, 0o644))
	client.mustRun(t, work, "add", "blob.bin")
	client.mustRun(t, work, "commit", "-m", "add a large blob")
	client.mustRun(t, work, "push", "origin", "main")

	size, err := server.Git("repo", "cat-file", "-s", "refs/heads/main:blob.bin")
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(len(blob)), size)
}

func TestGitServerRefusesSSHCommandsOutsideRoot(t *testing.T) {
	t.Parallel()
	keyPEM, publicKey := generateTestSSHKey(t)
	server := startTestGitServer(t, GitServerOptions{AuthorizedKeys: []ssh.PublicKey{publicKey}})
	_, err := server.CreateBareRepo("repo")
	require.NoError(t, err)
	_, err = server.CreateBareRepo("../escaped")
	require.Error(t, err)

	signer, err := ssh.ParsePrivateKey(keyPEM)
	require.NoError(t, err)
	sshURL, err := url.Parse(server.SSHURL("repo"))
	require.NoError(t, err)
	conn, err := ssh.Dial("tcp", sshURL.Host, &ssh.ClientConfig{
		User: "git", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(server.HostKey()), Timeout: 10 * time.Second,
	})
	require.NoError(t, err)
	defer conn.Close()

	for command, wantMessage := range map[string]string{
		"git-upload-pack '/../escaped.git'":  "must not contain",
		"git-receive-pack 'repo.git/../..'":  "must not contain",
		"sh -c 'cat /etc/passwd'":            "unrecognized command",
		"git-upload-pack 'repo.git' --extra": "single argument",
	} {
		session, err := conn.NewSession()
		require.NoError(t, err)
		out, err := session.CombinedOutput(command)
		session.Close()
		var exitErr *ssh.ExitError
		require.True(t, errors.As(err, &exitErr), "%s: want an exit status, got %v", command, err)
		require.Equal(t, 128, exitErr.ExitStatus(), command)
		require.Contains(t, string(out), wantMessage, command)
	}
}

func TestGitServerStopEndsOpenConnections(t *testing.T) {
	t.Parallel()
	keyPEM, publicKey := generateTestSSHKey(t)
	server, err := StartGitServer(t.TempDir(), GitServerOptions{AuthorizedKeys: []ssh.PublicKey{publicKey}})
	require.NoError(t, err)
	sshURL, err := url.Parse(server.SSHURL("repo"))
	require.NoError(t, err)
	signer, err := ssh.ParsePrivateKey(keyPEM)
	require.NoError(t, err)
	idleClient, err := ssh.Dial("tcp", sshURL.Host, &ssh.ClientConfig{
		User: "git", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(server.HostKey()), Timeout: 10 * time.Second,
	})
	require.NoError(t, err)
	defer idleClient.Close()
	// A client that connects but never starts the SSH handshake.
	stalled, err := net.Dial("tcp", sshURL.Host)
	require.NoError(t, err)
	defer stalled.Close()

	stopped := make(chan struct{})
	go func() {
		server.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return while clients held connections open")
	}
	_, err = net.DialTimeout("tcp", sshURL.Host, time.Second)
	require.Error(t, err, "the SSH listener must be closed")
	_, err = http.Get(server.HTTPURL("repo") + "/info/refs")
	require.Error(t, err, "the HTTP listener must be closed")
}

func TestGitServerParsesGitSSHCommands(t *testing.T) {
	t.Parallel()
	for command, want := range map[string][2]string{
		"git-upload-pack '/team/config.git'": {"upload-pack", "/team/config.git"},
		"git-receive-pack 'repo.git'":        {"receive-pack", "repo.git"},
		"git upload-pack '/repo.git'":        {"upload-pack", "/repo.git"},
		`git-upload-pack 'it'\''s.git'`:      {"upload-pack", "it's.git"},
	} {
		service, path, err := parseGitSSHCommand(command)
		require.NoError(t, err, command)
		require.Equal(t, want, [2]string{service, path}, command)
	}
}

func TestGitServerGoGitPushesOverHTTPWithBasicAuth(t *testing.T) {
	t.Parallel()
	server := startTestGitServer(t, GitServerOptions{HTTPUsername: testHTTPUser, HTTPPassword: testHTTPPassword})
	_, err := server.CreateRepoWithCommit("repo", map[string]string{"README.md": "hello\n"})
	require.NoError(t, err)
	auth := &githttp.BasicAuth{Username: testHTTPUser, Password: testHTTPPassword}

	_, err = git.PlainClone(t.TempDir(), false, &git.CloneOptions{
		URL: server.HTTPURL("repo"), Auth: &githttp.BasicAuth{Username: testHTTPUser, Password: "wrong-password"},
	})
	require.ErrorIs(t, err, transport.ErrAuthenticationRequired)

	commit := goGitCloneCommitPush(t, server.HTTPURL("repo"), auth)
	remoteMain, err := server.Git("repo", "rev-parse", "refs/heads/main")
	require.NoError(t, err)
	require.Equal(t, commit, remoteMain)
}

func TestGitServerGoGitPushesOverSSHWithKnownHosts(t *testing.T) {
	t.Parallel()
	keyPEM, publicKey := generateTestSSHKey(t)
	server := startTestGitServer(t, GitServerOptions{AuthorizedKeys: []ssh.PublicKey{publicKey}})
	_, err := server.CreateRepoWithCommit("repo", map[string]string{"README.md": "hello\n"})
	require.NoError(t, err)
	knownHostsFile := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(knownHostsFile, []byte(server.KnownHosts()+"\n"), 0o600))
	auth, err := gitssh.NewPublicKeys("git", keyPEM, "")
	require.NoError(t, err)
	auth.HostKeyCallback, err = gitssh.NewKnownHostsCallback(knownHostsFile)
	require.NoError(t, err)

	commit := goGitCloneCommitPush(t, server.SSHURL("repo"), auth)
	remoteMain, err := server.Git("repo", "rev-parse", "refs/heads/main")
	require.NoError(t, err)
	require.Equal(t, commit, remoteMain)
}

// goGitCloneCommitPush clones remoteURL with go-git, commits one file on
// main and pushes it, returning the new commit's hash.
func goGitCloneCommitPush(t *testing.T, remoteURL string, auth transport.AuthMethod) string {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: remoteURL, Auth: auth})
	require.NoError(t, err)
	worktree, err := repo.Worktree()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "from-go-git.txt"), []byte("pushed by go-git\n"), 0o644))
	_, err = worktree.Add("from-go-git.txt")
	require.NoError(t, err)
	hash, err := worktree.Commit("commit from go-git", &git.CommitOptions{
		Author: &object.Signature{Name: "go-git", Email: "go-git@example.invalid", When: time.Now()},
	})
	require.NoError(t, err)
	require.NoError(t, repo.Push(&git.PushOptions{Auth: auth}))
	return hash.String()
}

func startTestGitServer(t *testing.T, options GitServerOptions) *GitServer {
	t.Helper()
	server, err := StartGitServer(t.TempDir(), options)
	require.NoError(t, err)
	t.Cleanup(func() {
		server.Stop()
		if t.Failed() {
			if log, err := os.ReadFile(server.LogPath); err == nil {
				t.Logf("git server log:\n%s", log)
			}
		}
	})
	return server
}

func generateTestSSHKey(t *testing.T) ([]byte, ssh.PublicKey) {
	t.Helper()
	privateKeyPEM, publicKey, err := GenerateSSHKeyPair()
	require.NoError(t, err)
	return privateKeyPEM, publicKey
}

func httpURLWithPassword(t *testing.T, server *GitServer, name, password string) string {
	t.Helper()
	u, err := url.Parse(server.HTTPURL(name))
	require.NoError(t, err)
	u.User = url.UserPassword(testHTTPUser, password)
	return u.String()
}

// gitCLIClient runs the real git command line as a user would, isolated
// from the developer's git and ssh configuration.
type gitCLIClient struct {
	env []string
}

// newGitCLIClient prepares a client; with keyPEM it talks SSH through the
// OpenSSH client, using only that key and only the server's host key.
func newGitCLIClient(t *testing.T, server *GitServer, keyPEM []byte) *gitCLIClient {
	t.Helper()
	home := t.TempDir()
	env := append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Test Client", "GIT_AUTHOR_EMAIL=client@example.invalid",
		"GIT_COMMITTER_NAME=Test Client", "GIT_COMMITTER_EMAIL=client@example.invalid",
	)
	if keyPEM != nil {
		_, err := exec.LookPath("ssh")
		require.NoError(t, err, "the OpenSSH client (Debian package openssh-client) is needed for git over SSH")
		keyFile := filepath.Join(home, "id_ed25519")
		require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
		knownHostsFile := filepath.Join(home, "known_hosts")
		require.NoError(t, os.WriteFile(knownHostsFile, []byte(server.KnownHosts()+"\n"), 0o600))
		env = append(env, "GIT_SSH_COMMAND=ssh -F /dev/null -i '"+keyFile+"' -o IdentitiesOnly=yes"+
			" -o BatchMode=yes -o UserKnownHostsFile='"+knownHostsFile+"' -o GlobalKnownHostsFile=/dev/null"+
			" -o StrictHostKeyChecking=yes")
	}
	return &gitCLIClient{env: env}
}

// run runs git in dir (a temporary directory when empty) and returns its
// combined, trimmed output.
func (c *gitCLIClient) run(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (c *gitCLIClient) mustRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := c.run(t, dir, args...)
	require.NoError(t, err, "git %s:\n%s", strings.Join(args, " "), out)
	return out
}

func (c *gitCLIClient) clone(t *testing.T, remoteURL string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	c.mustRun(t, "", "clone", remoteURL, dir)
	return dir
}

// commitFile writes path (slash-separated) in the clone at dir, commits it
// and returns the new commit's hash.
func (c *gitCLIClient) commitFile(t *testing.T, dir, path, content string) string {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(path))
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	c.mustRun(t, dir, "add", path)
	c.mustRun(t, dir, "commit", "-m", "update "+path)
	return c.mustRun(t, dir, "rev-parse", "HEAD")
}
