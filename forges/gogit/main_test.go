package gogit

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
	"github.com/configbutler/gitops-reverser/test/harness"
)

const (
	testHTTPUser     = "worker"
	testHTTPPassword = "correct-horse-battery"
)

// shared is the git server (HTTP with basic auth, SSH with one
// authorized key, and its repositories on disk for file://) that every
// test in the package uses; it allows object filters (partial clone), as
// the forges do. withoutFilters is the same server with filters off
// (uploadpack.allowFilter unset, git's default), for the fetches that
// must work without them. TestMain sets both before any test runs and no
// test changes them.
var shared, withoutFilters *testServer

type testServer struct {
	*harness.GitServer
	// sshKey is the private key the server authorizes.
	sshKey []byte
}

func TestMain(m *testing.M) {
	os.Exit(runWithGitServer(m))
}

func runWithGitServer(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gogit-forge-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating the git server directory:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	keyPEM, publicKey, err := harness.GenerateSSHKeyPair()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, deny := range []bool{false, true} {
		server, err := harness.StartGitServer(filepath.Join(dir, fmt.Sprintf("deny-filters-%t", deny)), harness.GitServerOptions{
			HTTPUsername:   testHTTPUser,
			HTTPPassword:   testHTTPPassword,
			AuthorizedKeys: []ssh.PublicKey{publicKey},
			DenyFilters:    deny,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting the git server:", err)
			return 1
		}
		defer server.Stop()
		if deny {
			withoutFilters = &testServer{GitServer: server, sshKey: keyPEM}
		} else {
			shared = &testServer{GitServer: server, sshKey: keyPEM}
		}
	}
	return m.Run()
}

// remote is one way of reaching a test server.
type remote struct {
	name    string
	server  *testServer
	options func(repo string) Options
	// filters says whether the server behind it leaves out the blobs a
	// fetch for a tree does not need. go-git's file:// transport runs the
	// local git-upload-pack with this process's config, which does not
	// allow filters.
	filters bool
}

// remotes are the three transports every behaviour is proven over, to
// the shared server.
func remotes() []remote {
	return remotesOf(shared)
}

// remotesOf are the three transports to server.
func remotesOf(server *testServer) []remote {
	filters := server == shared
	return []remote{
		{name: "http", server: server, filters: filters, options: func(repo string) Options {
			return Options{URL: server.HTTPURL(repo), Auth: BasicAuth{Username: testHTTPUser, Password: testHTTPPassword}}
		}},
		{name: "ssh", server: server, filters: filters, options: func(repo string) Options {
			return Options{URL: server.SSHURL(repo), Auth: SSHKey{PEM: server.sshKey, KnownHosts: []byte(server.KnownHosts())}}
		}},
		{name: "file", server: server, options: func(repo string) Options {
			return Options{URL: server.FileURL(repo)}
		}},
	}
}

// forEachRemote runs test once per transport, in parallel, each on its
// own repositories.
func forEachRemote(t *testing.T, test func(t *testing.T, r remote)) {
	t.Helper()
	forEachRemoteIn(t, remotes(), test)
}

// forEachRemoteIn runs test once per remote of rs, in parallel.
func forEachRemoteIn(t *testing.T, rs []remote, test func(t *testing.T, r remote)) {
	t.Helper()
	for _, r := range rs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			test(t, r)
		})
	}
}

// repoName is a repository name unique to the running (sub)test, and to
// this run of it, as -count reruns tests against the same server.
func repoName(t *testing.T, suffix ...string) string {
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	for _, s := range suffix {
		name += "-" + s
	}
	return name + "-" + strings.ToLower(rand.Text()[:8])
}

// createRepo makes a bare repository whose main branch holds one commit
// with files (those ending in .sh executable), committed and pushed with
// the git CLI. (The harness's
// CreateRepoWithCommit also commits its own index lock file,
// ".git-index.lock", which would be in every tree these tests compare.)
func createRepo(t *testing.T, files map[string]string, suffix ...string) (name, head string) {
	t.Helper()
	return createRepoOn(t, shared, files, suffix...)
}

// createRepoOn is createRepo on server.
func createRepoOn(t *testing.T, server *testServer, files map[string]string, suffix ...string) (name, head string) {
	t.Helper()
	name = repoName(t, suffix...)
	_, err := server.CreateBareRepo(name)
	require.NoError(t, err)
	cli := newGitCLI(t)
	work := t.TempDir()
	cli.run(t, work, "init", "--quiet", "--initial-branch=main")
	for path, content := range files {
		full := filepath.Join(work, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		mode := os.FileMode(0o644)
		if strings.HasSuffix(path, ".sh") {
			mode = 0o755
		}
		require.NoError(t, os.WriteFile(full, []byte(content), mode))
	}
	cli.run(t, work, "add", "--all")
	cli.run(t, work, "commit", "--quiet", "--message", "Initial commit")
	cli.run(t, work, "push", "--quiet", server.FileURL(name), "main")
	return name, cli.run(t, work, "rev-parse", "HEAD")
}

func newClient(t *testing.T, r remote, repo string) *Client {
	t.Helper()
	client, err := New(r.options(repo))
	require.NoError(t, err)
	return client
}

// serverGit runs git against the bare repository on the server.
func serverGit(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := shared.Git(repo, args...)
	require.NoError(t, err)
	return out
}

// serverFile is the content of path at rev on the server, byte for byte.
func serverFile(t *testing.T, repo, rev, path string) string {
	t.Helper()
	out, err := shared.ReadFile(repo, rev, path)
	require.NoError(t, err)
	return out
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// testAuthor and testCommitter differ in every field, zone included, so a
// swapped or re-stamped identity shows.
func testAuthor() forges.Signature {
	return forges.Signature{
		Name: "Jane Operator", Email: "jane@example.com",
		When: time.Date(2024, 3, 1, 10, 30, 0, 0, time.FixedZone("CET", 3600)),
	}
}

func testCommitter() forges.Signature {
	return forges.Signature{
		Name: "GitOps Reverser", Email: "bot@example.com",
		When: time.Date(2024, 3, 1, 9, 45, 12, 0, time.UTC),
	}
}

func commitRequest(branch, expectedHead, message string, changes ...gitfile.Change) forges.CommitRequest {
	return forges.CommitRequest{
		Branch: branch, ExpectedHead: expectedHead, Message: message,
		Author: testAuthor(), Committer: testCommitter(), Changes: changes,
	}
}

func put(path, content string) gitfile.Change {
	return gitfile.Change{Path: path, Content: []byte(content)}
}

func del(path string) gitfile.Change {
	return gitfile.Change{Path: path, Delete: true}
}

// filesOnServer lists the files of rev in the bare repository.
func filesOnServer(t *testing.T, repo, rev string) []string {
	t.Helper()
	out := serverGit(t, repo, "ls-tree", "-r", "--name-only", rev)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func treePaths(entries []forges.TreeEntry) []string {
	paths := make([]string, 0, len(entries))
	for _, entry := range entries {
		paths = append(paths, entry.Path)
	}
	return paths
}
