package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// GitServerOptions configures StartGitServer. The zero value serves
// anonymous HTTP and refuses every SSH key.
type GitServerOptions struct {
	// HTTPUsername and HTTPPassword, when HTTPUsername is set, make the HTTP
	// endpoint demand basic auth with exactly these credentials.
	HTTPUsername string
	HTTPPassword string
	// AuthorizedKeys are the client public keys the SSH endpoint accepts;
	// more can be added later with AuthorizeSSHKey.
	AuthorizedKeys []ssh.PublicKey
	// DenyNonFastForwards makes every repository refuse non-fast-forward
	// updates on the server side (receive.denyNonFastForwards), so even a
	// forced push is refused, as a protected branch on a forge would.
	DenyNonFastForwards bool
	// DenyFilters turns partial clone off: upload-pack then neither
	// advertises the "filter" capability nor honours a filter, as on a
	// server without uploadpack.allowFilter, which is git's default
	// (https://git-scm.com/docs/git-config#Documentation/git-config.txt-uploadpackallowFilter).
	// The zero value allows filters, as the forges do.
	DenyFilters bool
}

// GitServer is a plain git remote on loopback: bare repositories under one
// root directory, served by the real git over smart HTTP (git http-backend
// as CGI) and over SSH (git upload-pack / receive-pack per exec request).
type GitServer struct {
	// Root holds the bare repositories, <Root>/<name>.git.
	Root string
	// LogPath collects git http-backend's stderr and SSH connection errors.
	LogPath string

	gitBin  string
	homeDir string
	tmpDir  string
	options GitServerOptions
	logFile *os.File
	logger  *log.Logger

	httpListener net.Listener
	httpServer   *http.Server
	httpDone     chan struct{}

	sshListener net.Listener
	sshConfig   *ssh.ServerConfig
	hostKey     ssh.Signer
	sshDone     chan struct{}

	// ctx is cancelled by Stop, killing git processes still serving SSH.
	ctx    context.Context
	cancel context.CancelFunc

	mu             sync.Mutex
	authorizedKeys map[string]bool
	sshConns       map[net.Conn]bool
	stopping       bool
	sshHandlers    sync.WaitGroup
}

// StartGitServer serves bare repositories kept under dir/repos over HTTP and
// SSH on 127.0.0.1. dir also receives the HOME of the child git processes
// (so the user's git config does not leak in) and the server log. Call Stop
// when done.
func StartGitServer(dir string, options GitServerOptions) (*GitServer, error) {
	gitBin, err := LookSystemBinary("git", "git")
	if err != nil {
		return nil, err
	}
	s := &GitServer{
		Root:           filepath.Join(dir, "repos"),
		LogPath:        filepath.Join(dir, "gitserver.log"),
		gitBin:         gitBin,
		homeDir:        filepath.Join(dir, "home"),
		tmpDir:         filepath.Join(dir, "tmp"),
		options:        options,
		authorizedKeys: map[string]bool{},
		sshConns:       map[net.Conn]bool{},
	}
	for _, d := range []string{s.Root, s.homeDir, s.tmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating git server directory %s: %w", d, err)
		}
	}
	for _, key := range options.AuthorizedKeys {
		s.AuthorizeSSHKey(key)
	}
	if s.logFile, err = os.Create(s.LogPath); err != nil {
		return nil, fmt.Errorf("creating git server log: %w", err)
	}
	s.logger = log.New(s.logFile, "", log.LstdFlags|log.Lmicroseconds)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.startHTTP(); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.startSSH(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop closes both listeners, ends open SSH connections and the git
// processes serving them, and waits for the handlers to return.
func (s *GitServer) Stop() {
	if s == nil {
		return
	}
	if s.httpServer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.httpServer.Shutdown(ctx); err != nil {
			_ = s.httpServer.Close()
		}
		cancel()
		<-s.httpDone
	}
	if s.sshListener != nil {
		_ = s.sshListener.Close()
		<-s.sshDone
		s.mu.Lock()
		s.stopping = true
		for conn := range s.sshConns {
			_ = conn.Close()
		}
		s.mu.Unlock()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.sshHandlers.Wait()
	if s.logFile != nil {
		_ = s.logFile.Close()
	}
}

// AuthorizeSSHKey lets clients holding the private half of key in over SSH.
func (s *GitServer) AuthorizeSSHKey(key ssh.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorizedKeys[string(key.Marshal())] = true
}

// RepoPath is where the bare repository name lives: <Root>/<name>.git.
func (s *GitServer) RepoPath(name string) string {
	return filepath.Join(s.Root, name+".git")
}

// HTTPURL is the smart-HTTP clone URL of repository name, without
// credentials.
func (s *GitServer) HTTPURL(name string) string {
	return "http://" + s.httpListener.Addr().String() + "/" + name + ".git"
}

// SSHURL is the SSH clone URL of repository name, as user git.
func (s *GitServer) SSHURL(name string) string {
	return "ssh://git@" + s.sshListener.Addr().String() + "/" + name + ".git"
}

// FileURL is the file:// URL of repository name, for clients on this host
// that should bypass both transports.
func (s *GitServer) FileURL(name string) string {
	return "file://" + filepath.ToSlash(s.RepoPath(name))
}

// CreateBareRepo creates the empty bare repository <Root>/<name>.git with
// main as its initial branch and returns its path.
func (s *GitServer) CreateBareRepo(name string) (string, error) {
	if _, err := s.resolveRepoPath(name + ".git"); err != nil {
		return "", fmt.Errorf("creating bare repository %q: %w", name, err)
	}
	path := s.RepoPath(name)
	if _, err := s.runGit(nil, "init", "--bare", "--initial-branch=main", path); err != nil {
		return "", fmt.Errorf("creating bare repository %q: %w", name, err)
	}
	return path, nil
}

// CreateRepoWithCommit creates bare repository name whose main branch holds
// one commit with files (slash-separated path -> content) and returns that
// commit's hash.
func (s *GitServer) CreateRepoWithCommit(name string, files map[string]string) (string, error) {
	if _, err := s.CreateBareRepo(name); err != nil {
		return "", err
	}
	return s.CommitFiles(name, files, "Initial commit")
}

// CommitFiles commits files (slash-separated path -> content) on top of the
// main branch of repository name, as another writer to the remote would, and
// returns the new commit's hash.
func (s *GitServer) CommitFiles(name string, files map[string]string, message string) (string, error) {
	return s.CommitFilesOn(name, "main", files, message)
}

// CommitFilesOn is CommitFiles on top of branch, which must exist.
func (s *GitServer) CommitFilesOn(name, branch string, files map[string]string, message string) (string, error) {
	return s.commitOn(name, branch, message, func(workTree string, git func(args ...string) error) error {
		if err := writeFiles(workTree, files); err != nil {
			return fmt.Errorf("writing files to commit: %w", err)
		}
		// Only the given paths: the work tree lacks the head's other files,
		// which must stay as they are.
		add := []string{"add", "--"}
		for path := range files {
			add = append(add, path)
		}
		return git(add...)
	})
}

// RemoveFiles commits the removal of paths from the main branch of
// repository name, as a human cleaning up would, and returns the new
// commit's hash.
func (s *GitServer) RemoveFiles(name string, paths []string, message string) (string, error) {
	return s.commitOn(name, "main", message, func(_ string, git func(args ...string) error) error {
		return git(append([]string{"rm", "--cached", "--quiet", "--"}, paths...)...)
	})
}

// commitOn commits on top of branch what stage puts in the index, which
// starts as branch's tree; stage runs git on the index and an empty work
// tree. A branch that does not exist yet (main of an empty repository)
// gets a root commit.
func (s *GitServer) commitOn(name, branch, message string, stage func(workTree string, git func(args ...string) error) error) (string, error) {
	workTree, err := os.MkdirTemp(s.tmpDir, "worktree-")
	if err != nil {
		return "", fmt.Errorf("creating a work tree to commit to %q: %w", name, err)
	}
	defer os.RemoveAll(workTree)
	// The index lives outside the work tree, so it is never staged itself.
	env := append(commitIdentityEnv(), "GIT_INDEX_FILE="+workTree+".index")
	defer os.Remove(workTree + ".index")
	gitOut := func(args ...string) (string, error) {
		out, err := s.runGit(env, append([]string{"--git-dir=" + s.RepoPath(name), "--work-tree=" + workTree}, args...)...)
		return strings.TrimSpace(out), err
	}
	git := func(args ...string) error {
		_, err := gitOut(args...)
		return err
	}
	ref := "refs/heads/" + branch
	parent, err := s.Git(name, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		parent = ""
	} else {
		if err := git("read-tree", ref); err != nil {
			return "", fmt.Errorf("reading the head of %q: %w", name, err)
		}
	}
	if err := stage(workTree, git); err != nil {
		return "", fmt.Errorf("staging a commit to %q: %w", name, err)
	}
	// commit-tree and update-ref rather than commit, which writes HEAD
	// only: the branch moves from the parent read above or not at all.
	tree, err := gitOut("write-tree")
	if err != nil {
		return "", fmt.Errorf("writing the tree to commit to %q: %w", name, err)
	}
	commitArgs := []string{"commit-tree", tree, "-m", message}
	if parent != "" {
		commitArgs = append(commitArgs, "-p", parent)
	}
	commit, err := gitOut(commitArgs...)
	if err == nil {
		err = git("update-ref", ref, commit, parent)
	}
	if err != nil {
		return "", fmt.Errorf("committing to %s of %q: %w", branch, name, err)
	}
	return commit, nil
}

func writeFiles(dir string, files map[string]string) error {
	paths := make([]string, 0, len(files))
	for path := range files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := os.WriteFile(full, []byte(files[path]), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// Git runs git against bare repository name (git --git-dir=<repo> args...)
// and returns its stdout with surrounding white space trimmed, for commands
// whose output is a value (rev-parse, log). Read a file's content with
// ReadFile, which does not trim.
func (s *GitServer) Git(name string, args ...string) (string, error) {
	out, err := s.runGit(nil, append([]string{"--git-dir=" + s.RepoPath(name)}, args...)...)
	if err != nil {
		return "", fmt.Errorf("reading repository %q: %w", name, err)
	}
	return strings.TrimSpace(out), nil
}

// ReadFile returns the content of path at rev (a branch, tag or commit) in
// repository name byte for byte, so a missing or doubled final newline shows.
func (s *GitServer) ReadFile(name, rev, path string) (string, error) {
	out, err := s.runGit(nil, "--git-dir="+s.RepoPath(name), "cat-file", "blob", rev+":"+path)
	if err != nil {
		return "", fmt.Errorf("reading %s:%s in repository %q: %w", rev, path, name, err)
	}
	return out, nil
}

// runGit runs the server's git with the isolated environment plus extraEnv,
// returning stdout, or an error carrying stderr.
func (s *GitServer) runGit(extraEnv []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.gitBin, args...)
	cmd.Dir = s.homeDir
	cmd.Env = append(s.gitEnv(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// gitEnv is the whole environment of every git process the server starts:
// only PATH survives from ours, so neither the user's nor the system's git
// config changes how the remote behaves.
func (s *GitServer) gitEnv() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.homeDir,
		"XDG_CONFIG_HOME=" + filepath.Join(s.homeDir, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"LANG=C",
		"LC_ALL=C",
	}
	// Config through the environment applies to every repository, including
	// ones a test created without CreateBareRepo. http.receivepack is needed
	// because http-backend only allows pushes from an authenticated
	// REMOTE_USER unless told otherwise.
	config := [][2]string{{"http.receivepack", "true"}}
	if !s.options.DenyFilters {
		// upload-pack advertises "filter" only with this set
		// (https://git-scm.com/docs/protocol-capabilities#_filter).
		config = append(config, [2]string{"uploadpack.allowFilter", "true"})
	}
	if s.options.DenyNonFastForwards {
		config = append(config, [2]string{"receive.denyNonFastForwards", "true"})
	}
	env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(config)))
	for i, kv := range config {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// resolveRepoPath maps a repository path as a client names it ("/a/b.git",
// "a/b.git", "~/b.git") to a directory under Root, refusing any path that
// would climb out of Root.
func (s *GitServer) resolveRepoPath(clientPath string) (string, error) {
	trimmed := strings.TrimPrefix(clientPath, "~")
	trimmed = strings.Trim(filepath.ToSlash(trimmed), "/")
	if trimmed == "" {
		return "", errors.New("empty repository path")
	}
	for _, part := range strings.Split(trimmed, "/") {
		if part == ".." || part == "." || part == "" {
			return "", fmt.Errorf("repository path %q must not contain empty, '.' or '..' segments", clientPath)
		}
	}
	return filepath.Join(s.Root, filepath.FromSlash(trimmed)), nil
}

// commitIdentityEnv names the author and committer of commits the server
// makes itself, since its isolated HOME has no user.name.
func commitIdentityEnv() []string {
	return []string{
		"GIT_AUTHOR_NAME=Git Server", "GIT_AUTHOR_EMAIL=gitserver@example.invalid",
		"GIT_COMMITTER_NAME=Git Server", "GIT_COMMITTER_EMAIL=gitserver@example.invalid",
	}
}
