package gitobjects_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

// git runs the real git CLI in dir, isolated from the machine's config so
// nothing (autocrlf, filemode) changes what it hashes.
func git(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// TestWriteFilesMatchesGit builds the same files with the store and with
// git add + git write-tree. "a" is a directory between the files "a-b" and
// "a.txt" only in Git's canonical order ("a/" sorts after "a.txt"), so a
// plain sort by name would give another id.
func TestWriteFilesMatchesGit(t *testing.T) {
	contents := map[string]string{
		"a-b":          "dash\n",
		"a.txt":        "dot\n",
		"a/b.yaml":     "kind: ConfigMap\n",
		"a/c/deep.txt": "deep\n",
		"run.sh":       "#!/bin/sh\n",
	}
	dir := t.TempDir()
	git(t, dir, "", "init", "-q")
	store := gitobjects.NewStore()
	files := gitobjects.Files{}
	for path, content := range contents {
		full := filepath.Join(dir, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		mode, perm := filemode.Regular, os.FileMode(0o644)
		if strings.HasSuffix(path, ".sh") {
			mode, perm = filemode.Executable, 0o755
		}
		require.NoError(t, os.WriteFile(full, []byte(content), perm))
		blob, err := store.WriteBlob([]byte(content))
		require.NoError(t, err)
		require.Equal(t, git(t, dir, "", "hash-object", path), blob.String(), "blob of %s", path)
		files[path] = gitobjects.Entry{Mode: mode, Hash: blob}
	}
	git(t, dir, "", "add", "-A")

	root, err := store.WriteFiles(files)
	require.NoError(t, err)
	require.Equal(t, git(t, dir, "", "write-tree"), root.String())

	flat, err := store.FilesOf(root)
	require.NoError(t, err)
	require.Equal(t, files, flat, "flattening gives back the files the tree was built from")
	content, err := store.Blob(files["a/c/deep.txt"].Hash)
	require.NoError(t, err)
	require.Equal(t, "deep\n", string(content))
}

// TestCommitsAreGitCommits: git computes the stored id from the stored
// bytes, and ancestry follows parents.
func TestCommitsAreGitCommits(t *testing.T) {
	store := gitobjects.NewStore()
	empty, err := store.WriteFiles(gitobjects.Files{})
	require.NoError(t, err)
	require.Equal(t, "4b825dc642cb6eb9a060e54bf8d69288fbee4904", empty.String(), "Git's empty tree")

	who := object.Signature{Name: "A", Email: "a@example.com", When: time.Unix(1700000000, 0).UTC()}
	first, err := store.WriteCommit(&object.Commit{Author: who, Committer: who, Message: "first\n", TreeHash: empty})
	require.NoError(t, err)
	second, err := store.WriteCommit(&object.Commit{Author: who, Committer: who, Message: "second\n",
		TreeHash: empty, ParentHashes: []plumbing.Hash{first}})
	require.NoError(t, err)

	raw, err := store.Raw(plumbing.CommitObject, second)
	require.NoError(t, err)
	require.Equal(t, second.String(), git(t, t.TempDir(), string(raw), "hash-object", "-t", "commit", "--stdin"))

	require.True(t, store.IsAncestor(first, second))
	require.True(t, store.IsAncestor(second, second), "a commit is its own ancestor")
	require.False(t, store.IsAncestor(second, first))
	require.True(t, store.Has(plumbing.CommitObject, first))
	require.False(t, store.Has(plumbing.TreeObject, first), "an object is found only as its own type")
	_, err = store.Commit(plumbing.NewHash(strings.Repeat("1", 40)))
	require.ErrorIs(t, err, plumbing.ErrObjectNotFound)
}
