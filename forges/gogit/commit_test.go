package gogit

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

func TestCommitPutsAndDeletesManyFilesInOneCommit(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		initial := map[string]string{}
		for i := range 30 {
			initial[fmt.Sprintf("apps/team-%d/deploy-%d.yaml", i%3, i)] = fmt.Sprintf("replicas: %d\n", i)
		}
		repo, head := createRepo(t, initial)
		client := newClient(t, r, repo)
		ctx := testContext(t)

		var changes []gitfile.Change
		want := map[string]string{}
		for path, content := range initial {
			want[path] = content
		}
		for i := range 50 {
			path := fmt.Sprintf("clusters/prod/ns-%d/cm-%d.yaml", i%5, i)
			changes = append(changes, put(path, fmt.Sprintf("data: %d\n", i)))
			want[path] = fmt.Sprintf("data: %d\n", i)
		}
		for i := range 20 {
			path := fmt.Sprintf("apps/team-%d/deploy-%d.yaml", i%3, i)
			changes = append(changes, del(path))
			delete(want, path)
		}
		changes = append(changes, put("apps/team-0/deploy-21.yaml", "replicas: 99\n"))
		want["apps/team-0/deploy-21.yaml"] = "replicas: 99\n"

		result, err := client.Commit(ctx, commitRequest("main", head, "mirror 71 changes", changes...))
		require.NoError(t, err)

		require.Equal(t, result.Commit, serverGit(t, repo, "rev-parse", "refs/heads/main"))
		require.Equal(t, head, serverGit(t, repo, "rev-parse", "refs/heads/main^"), "the parent is the expected head")
		require.Equal(t, "2", serverGit(t, repo, "rev-list", "--count", "refs/heads/main"), "one commit for all changes")
		require.ElementsMatch(t, keys(want), filesOnServer(t, repo, "main"))
		for path, content := range want {
			if strings.HasPrefix(path, "clusters/prod/ns-1/") || path == "apps/team-0/deploy-21.yaml" {
				require.Equal(t, content, serverFile(t, repo, "main", path))
			}
		}
		require.Len(t, result.Blobs, 51)
		for path, blob := range result.Blobs {
			require.Equal(t, serverGit(t, repo, "rev-parse", "main:"+path), blob, path)
		}
		serverGit(t, repo, "fsck", "--strict", "--no-dangling")

		entries, err := client.Tree(ctx, result.Commit, "")
		require.NoError(t, err)
		require.ElementsMatch(t, keys(want), treePaths(entries))
	})
}

func TestCommitKeepsAuthorCommitterDatesAndMessage(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, head := createRepo(t, map[string]string{"README.md": "hello\n"})
		client := newClient(t, r, repo)
		message := "Update ConfigMap default/settings\n\nActor: system:serviceaccount:ci:deployer\n"
		_, err := client.Commit(testContext(t), commitRequest("main", head, message, put("default/settings.yaml", "a: 1\n")))
		require.NoError(t, err)

		identity := serverGit(t, repo, "log", "-1", "--format=%an|%ae|%aI|%cn|%ce|%cI", "main")
		require.Equal(t, "Jane Operator|jane@example.com|2024-03-01T10:30:00+01:00|"+
			"GitOps Reverser|bot@example.com|2024-03-01T09:45:12+00:00", identity)
		require.Equal(t, strings.TrimSpace(message), serverGit(t, repo, "log", "-1", "--format=%B", "main"))
	})
}

func TestCommitCreatesAndRemovesNestedDirectories(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, head := createRepo(t, map[string]string{"keep/me.yaml": "k: v\n", "keep/deep/sibling.yaml": "s: 1\n"})
		client := newClient(t, r, repo)
		ctx := testContext(t)

		created, err := client.Commit(ctx, commitRequest("main", head, "nested",
			put("a/b/c/d/leaf.yaml", "leaf: 1\n"),
			put("keep/deep/er/x.yaml", "x: 1\n")))
		require.NoError(t, err)
		require.Equal(t, []string{"a", "a/b", "a/b/c", "a/b/c/d", "keep", "keep/deep", "keep/deep/er"},
			strings.Split(serverGit(t, repo, "ls-tree", "-r", "-d", "--name-only", "main"), "\n"))

		removed, err := client.Commit(ctx, commitRequest("main", created.Commit, "remove",
			del("a/b/c/d/leaf.yaml"),
			del("keep/deep/er/x.yaml"),
			del("keep/deep/never-existed.yaml"),
			del("no/such/dir/file.yaml")))
		require.NoError(t, err)
		require.Equal(t, removed.Commit, serverGit(t, repo, "rev-parse", "main"))
		require.Equal(t, []string{"keep", "keep/deep"},
			strings.Split(serverGit(t, repo, "ls-tree", "-r", "-d", "--name-only", "main"), "\n"),
			"emptied directories are gone, the others stay")
		require.ElementsMatch(t, []string{"keep/me.yaml", "keep/deep/sibling.yaml"}, filesOnServer(t, repo, "main"))
		require.Equal(t, serverGit(t, repo, "rev-parse", head+"^{tree}"), serverGit(t, repo, "rev-parse", "main^{tree}"),
			"the tree is byte for byte the original again")
	})
}

func TestCommitDeletingEveryFileLeavesAnEmptyTree(t *testing.T) {
	t.Parallel()
	repo, head := createRepo(t, map[string]string{"only/file.yaml": "x\n"})
	client := newClient(t, remotes()[0], repo)
	result, err := client.Commit(testContext(t), commitRequest("main", head, "empty", del("only/file.yaml")))
	require.NoError(t, err)
	require.Empty(t, filesOnServer(t, repo, result.Commit))
	require.Equal(t, "4b825dc642cb6eb9a060e54bf8d69288fbee4904", serverGit(t, repo, "rev-parse", "main^{tree}"))
}

func TestCommitCreatesBranchFromExistingCommit(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, mainHead := createRepo(t, map[string]string{"base/a.yaml": "a\n", "base/b.yaml": "b\n"})
		client := newClient(t, r, repo)
		ctx := testContext(t)
		_, err := client.Head(ctx, "feature")
		require.ErrorIs(t, err, forges.ErrNotFound)

		req := commitRequest("feature", "", "start feature", put("feature/c.yaml", "c\n"), del("base/b.yaml"))
		req.BaseHead = mainHead
		result, err := client.Commit(ctx, req)
		require.NoError(t, err)

		require.Equal(t, result.Commit, serverGit(t, repo, "rev-parse", "refs/heads/feature"))
		require.Equal(t, mainHead, serverGit(t, repo, "rev-parse", "feature^"))
		require.Equal(t, mainHead, serverGit(t, repo, "rev-parse", "main"), "the base branch is untouched")
		require.ElementsMatch(t, []string{"base/a.yaml", "feature/c.yaml"}, filesOnServer(t, repo, "feature"))
		head, err := client.Head(ctx, "feature")
		require.NoError(t, err)
		require.Equal(t, result.Commit, head)
	})
}

func TestCommitCreatesOrphanBranch(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, mainHead := createRepo(t, map[string]string{"main-only.yaml": "m\n"})
		client := newClient(t, r, repo)
		result, err := client.Commit(testContext(t), commitRequest("mirror", "", "orphan", put("clusters/a.yaml", "a\n")))
		require.NoError(t, err)

		require.Equal(t, result.Commit, serverGit(t, repo, "rev-list", "--parents", "-n", "1", "mirror"), "no parents")
		require.Equal(t, []string{"clusters/a.yaml"}, filesOnServer(t, repo, "mirror"))
		require.Equal(t, mainHead, serverGit(t, repo, "rev-parse", "main"))
	})
}

func TestCommitToEmptyRepositoryCreatesTheFirstCommit(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo := repoName(t)
		_, err := shared.CreateBareRepo(repo)
		require.NoError(t, err)
		client := newClient(t, r, repo)
		ctx := testContext(t)

		require.NoError(t, client.Probe(ctx), "an empty repository answers")
		_, err = client.Head(ctx, "main")
		require.ErrorIs(t, err, forges.ErrEmptyRepository)

		result, err := client.Commit(ctx, commitRequest("main", "", "first", put("clusters/prod/ns.yaml", "kind: Namespace\n")))
		require.NoError(t, err)
		require.Equal(t, result.Commit, serverGit(t, repo, "rev-parse", "HEAD"), "HEAD of the bare repository names main")
		require.Equal(t, "1", serverGit(t, repo, "rev-list", "--count", "main"))
		head, err := client.Head(ctx, "main")
		require.NoError(t, err)
		require.Equal(t, result.Commit, head)

		second, err := client.Commit(ctx, commitRequest("main", head, "second", put("clusters/prod/b.yaml", "b\n")))
		require.NoError(t, err)
		require.Equal(t, head, serverGit(t, repo, "rev-parse", second.Commit+"^"))
	})
}

// recordingSigner stands in for an SSH signer: it records what it was
// asked to sign and answers a fixed armored block.
type recordingSigner struct {
	payloads [][]byte
}

const fakeSSHSignature = "-----BEGIN SSH SIGNATURE-----\n" +
	"U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgZmFrZWZha2VmYWtlZmFrZWZha2VmYWtl\n" +
	"ZmFrZWZha2UAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5AAAAQGZha2U=\n" +
	"-----END SSH SIGNATURE-----\n"

func (s *recordingSigner) Sign(payload []byte) ([]byte, error) {
	s.payloads = append(s.payloads, append([]byte(nil), payload...))
	return []byte(fakeSSHSignature), nil
}

func TestCommitWithSignerStoresTheSignatureAsGpgsig(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, head := createRepo(t, map[string]string{"a.yaml": "a\n"})
		client := newClient(t, r, repo)
		signer := &recordingSigner{}
		req := commitRequest("main", head, "signed change\n", put("a.yaml", "b\n"))
		req.Signer = signer
		result, err := client.Commit(testContext(t), req)
		require.NoError(t, err)
		require.Len(t, signer.payloads, 1)

		raw := serverGit(t, repo, "cat-file", "-p", result.Commit)
		require.Contains(t, raw, "\ngpgsig -----BEGIN SSH SIGNATURE-----\n U1NIU0lH")
		require.Contains(t, raw, "\n -----END SSH SIGNATURE-----\n")
		// What was signed is the stored commit minus its gpgsig header,
		// which is exactly what git verify-commit will check.
		require.Equal(t, withoutGpgsig(raw)+"\n", string(signer.payloads[0]))
		require.Equal(t, "signed change", serverGit(t, repo, "log", "-1", "--format=%B", "main"))
	})
}

// withoutGpgsig drops the gpgsig header and its continuation lines.
func withoutGpgsig(raw string) string {
	var kept []string
	inSignature := false
	for _, line := range strings.Split(raw, "\n") {
		switch {
		case strings.HasPrefix(line, "gpgsig "):
			inSignature = true
		case inSignature && strings.HasPrefix(line, " "):
		default:
			inSignature = false
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

func TestCommitAppliesChangesInOrder(t *testing.T) {
	t.Parallel()
	repo, head := createRepo(t, map[string]string{"a.yaml": "a\n"})
	client := newClient(t, remotes()[2], repo)
	result, err := client.Commit(testContext(t), commitRequest("main", head, "ordered",
		put("twice.yaml", "first\n"), put("twice.yaml", "second\n"),
		put("short-lived/x.yaml", "x\n"), del("short-lived/x.yaml"),
		del("a.yaml"), put("a.yaml", "back\n")))
	require.NoError(t, err)

	require.ElementsMatch(t, []string{"a.yaml", "twice.yaml"}, filesOnServer(t, repo, "main"))
	require.Equal(t, "second\n", serverFile(t, repo, "main", "twice.yaml"))
	require.Equal(t, "back\n", serverFile(t, repo, "main", "a.yaml"))
	require.Equal(t, map[string]string{
		"twice.yaml": serverGit(t, repo, "rev-parse", "main:twice.yaml"),
		"a.yaml":     serverGit(t, repo, "rev-parse", "main:a.yaml"),
	}, result.Blobs, "no blob for a path the commit does not have")
}

func TestCommitKeepsTheExecutableBitOfARewrittenFile(t *testing.T) {
	t.Parallel()
	repo, head := createRepo(t, map[string]string{"hack/run.sh": "#!/bin/sh\n"})
	client := newClient(t, remotes()[2], repo)
	ctx := testContext(t)
	entries, err := client.Tree(ctx, head, "hack")
	require.NoError(t, err)
	require.Equal(t, forges.ModeExecutable, entries[0].Mode)

	_, err = client.Commit(ctx, commitRequest("main", head, "edit script", put("hack/run.sh", "#!/bin/sh\necho hi\n"), put("hack/new.sh", "x\n")))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(serverGit(t, repo, "ls-tree", "main", "hack/run.sh"), "100755 blob "))
	require.True(t, strings.HasPrefix(serverGit(t, repo, "ls-tree", "main", "hack/new.sh"), "100644 blob "), "new files are regular")
}

func TestCommitRefusesInvalidPathsWithoutPushing(t *testing.T) {
	t.Parallel()
	repo, head := createRepo(t, map[string]string{"dir/file.yaml": "x\n"})
	client := newClient(t, remotes()[2], repo)
	ctx := testContext(t)
	for _, change := range []gitfile.Change{
		put("", "x"), put("/abs.yaml", "x"), put("a//b.yaml", "x"), put("a/../b.yaml", "x"),
		put("./a.yaml", "x"), put(".git/config", "x"), put("sub/.GIT/x", "x"), put("a/", "x"),
		put("dir", "a file where a directory is"), put("dir/file.yaml/child", "a file used as a directory"),
		del("dir"),
	} {
		_, err := client.Commit(ctx, commitRequest("main", head, "bad", change))
		require.Error(t, err, "%+v", change)
	}
	require.Equal(t, head, serverGit(t, repo, "rev-parse", "main"))
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for key := range m {
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}
