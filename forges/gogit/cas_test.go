package gogit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

// The product guarantee: a change another writer made to the branch is
// never overwritten or reverted; the worker gets a conflict, re-reads, and
// its retry lands on top of the other change.
func TestCommitConflictsWhenBranchMovedAndRetryKeepsTheOtherChange(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, _ := createRepo(t, map[string]string{"apps/a.yaml": "a: 1\n"})
		worker := newClient(t, r, repo)
		other := newClient(t, r, repo)
		ctx := testContext(t)

		seen, err := worker.Head(ctx, "main")
		require.NoError(t, err)
		_, err = worker.Tree(ctx, seen, "")
		require.NoError(t, err)

		external, err := other.Commit(ctx, commitRequest("main", seen, "external edit",
			put("apps/a.yaml", "a: 2\n"), put("apps/external.yaml", "by: someone else\n")))
		require.NoError(t, err)

		_, err = worker.Commit(ctx, commitRequest("main", seen, "stale worker write",
			put("apps/a.yaml", "a: 3\n"), put("apps/worker.yaml", "by: worker\n")))
		require.ErrorIs(t, err, forges.ErrConflict)
		require.Equal(t, external.Commit, serverGit(t, repo, "rev-parse", "main"), "the external commit is still the head")
		require.Equal(t, "a: 2\n", serverFile(t, repo, "main", "apps/a.yaml"))

		head, err := worker.Head(ctx, "main")
		require.NoError(t, err)
		require.Equal(t, external.Commit, head)
		entries, err := worker.Tree(ctx, head, "apps")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"apps/a.yaml", "apps/external.yaml"}, treePaths(entries))

		retried, err := worker.Commit(ctx, commitRequest("main", head, "worker write, retried",
			put("apps/worker.yaml", "by: worker\n")))
		require.NoError(t, err)
		require.Equal(t, retried.Commit, serverGit(t, repo, "rev-parse", "main"))
		require.Equal(t, external.Commit, serverGit(t, repo, "rev-parse", "main^"))
		require.Equal(t, "by: someone else\n", serverFile(t, repo, "main", "apps/external.yaml"))
		require.Equal(t, "a: 2\n", serverFile(t, repo, "main", "apps/a.yaml"))
		require.Equal(t, "by: worker\n", serverFile(t, repo, "main", "apps/worker.yaml"))
	})
}

// A worker may commit on a head it has only seen through Head. When that
// head is gone before its snapshot was fetched, the answer is still a
// conflict, not "not found".
func TestCommitOnAnUnfetchedHeadThatMovedConflicts(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, _ := createRepo(t, map[string]string{"a.yaml": "a\n"})
		worker := newClient(t, r, repo)
		ctx := testContext(t)
		seen, err := worker.Head(ctx, "main")
		require.NoError(t, err)
		external, err := newClient(t, r, repo).Commit(ctx, commitRequest("main", seen, "external", put("a.yaml", "b\n")))
		require.NoError(t, err)

		_, err = worker.Commit(ctx, commitRequest("main", seen, "worker", put("c.yaml", "c\n")))
		require.ErrorIs(t, err, forges.ErrConflict)
		require.NotErrorIs(t, err, forges.ErrNotFound)
		require.Equal(t, external.Commit, serverGit(t, repo, "rev-parse", "main"))
	})
}

func TestCommitConflictsWithACommitPushedByTheGitCLI(t *testing.T) {
	t.Parallel()
	repo, head := createRepo(t, map[string]string{"a.yaml": "a\n"})
	worker := newClient(t, remotes()[0], repo)
	ctx := testContext(t)
	_, err := worker.Tree(ctx, head, "")
	require.NoError(t, err)

	cli := newGitCLI(t)
	checkout := filepath.Join(t.TempDir(), "checkout")
	cli.run(t, "", "clone", "--quiet", shared.FileURL(repo), checkout)
	require.NoError(t, os.WriteFile(filepath.Join(checkout, "cli.yaml"), []byte("from: cli\n"), 0o644))
	cli.run(t, checkout, "add", "cli.yaml")
	cli.run(t, checkout, "commit", "--quiet", "-m", "pushed by hand")
	cli.run(t, checkout, "push", "--quiet", "origin", "main")
	pushed := cli.run(t, checkout, "rev-parse", "HEAD")

	_, err = worker.Commit(ctx, commitRequest("main", head, "worker", put("a.yaml", "changed\n")))
	require.ErrorIs(t, err, forges.ErrConflict)
	require.Equal(t, pushed, serverGit(t, repo, "rev-parse", "main"))
	require.Equal(t, "a\n", serverFile(t, repo, "main", "a.yaml"))
}

func TestCommitConflictsWhenNewBranchAlreadyExists(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, head, client := repoWithFeatureBranch(t, r)
		ctx := testContext(t)

		orphan := commitRequest("feature", "", "orphan onto existing", put("b.yaml", "b\n"))
		_, err := client.Commit(ctx, orphan)
		require.ErrorIs(t, err, forges.ErrConflict)

		fromBase := commitRequest("feature", "", "new branch onto existing", put("b.yaml", "b\n"))
		fromBase.BaseHead = head
		_, err = client.Commit(ctx, fromBase)
		require.ErrorIs(t, err, forges.ErrConflict, "even a fast-forward must not take over an existing branch")
		require.Equal(t, head, serverGit(t, repo, "rev-parse", "feature"))
	})
}

func TestCommitConflictsWhenBranchWasDeleted(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, head, client := repoWithFeatureBranch(t, r)
		ctx := testContext(t)
		_, err := client.Tree(ctx, head, "")
		require.NoError(t, err)
		serverGit(t, repo, "branch", "-D", "feature")

		_, err = client.Commit(ctx, commitRequest("feature", head, "onto a deleted branch", put("b.yaml", "b\n")))
		require.ErrorIs(t, err, forges.ErrConflict)
		require.Equal(t, "", serverGit(t, repo, "branch", "--list", "feature"), "the branch is not recreated")
	})
}

// The advertisement check alone would miss a writer that moves the branch
// after receive-pack advertised it. A pre-receive hook moves the branch at
// exactly that moment; the update command still names the expected head as
// its old value, so receive-pack must refuse it.
func TestCommitConflictsWhenBranchMovesDuringThePush(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, head := createRepo(t, map[string]string{"a.yaml": "a\n"})
		concurrent := serverGit(t, repo, "-c", "user.name=Concurrent", "-c", "user.email=concurrent@example.com",
			"commit-tree", "-p", head, "-m", "concurrent writer", head+"^{tree}")
		hook := "#!/bin/sh\ncat >/dev/null\n" +
			// Ref updates are refused inside receive-pack's quarantine;
			// the concurrent writer is not in it.
			"env -u GIT_QUARANTINE_PATH git update-ref refs/heads/main " + concurrent + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(shared.RepoPath(repo), "hooks", "pre-receive"), []byte(hook), 0o755))
		client := newClient(t, r, repo)

		_, err := client.Commit(testContext(t), commitRequest("main", head, "racing", put("b.yaml", "b\n")))
		require.ErrorIs(t, err, forges.ErrConflict)
		require.Contains(t, err.Error(), "failed to update ref")
		require.Equal(t, concurrent, serverGit(t, repo, "rev-parse", "main"), "the concurrent write stands")
	})
}

// gitCLI runs the real git with an isolated configuration.
// repoWithFeatureBranch creates a repository whose branches main and
// feature are at its one commit (a.yaml), and a client for it on r.
func repoWithFeatureBranch(t *testing.T, r remote) (repo, head string, client *Client) {
	t.Helper()
	repo, head = createRepo(t, map[string]string{"a.yaml": "a\n"})
	serverGit(t, repo, "branch", "feature", head)
	return repo, head, newClient(t, r, repo)
}

type gitCLI struct {
	env []string
}

func newGitCLI(t *testing.T) gitCLI {
	home := t.TempDir()
	return gitCLI{env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1", "LANG=C", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Someone Else", "GIT_AUTHOR_EMAIL=else@example.com",
		"GIT_COMMITTER_NAME=Someone Else", "GIT_COMMITTER_EMAIL=else@example.com",
	}}
}

func (g gitCLI) run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = g.env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}
