package branch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// Against a real remote: the index lets the bytes of what the worker wrote
// go, and the plans that need them read them back. An object placed beside
// another in one file keeps the first object's text; a person's commit in
// between (a conflict: the index is reloaded, carrying what it knew) loses
// nothing; a restarted worker does the same from a fresh index.
func TestFilesLetGoAreReadBackWhenAPlanNeedsThem(t *testing.T) {
	ctx := context.Background()
	const repo = "released"
	bundled := branch.Target{Key: target, Path: "mirror", Placement: manifest.Placement{Default: "{namespace}/all.yaml"}}
	counting := &blobCounting{}
	w := newWorker(t, repo, func(f forges.Forge) forges.Forge { counting.Forge = f; return counting }, nil)
	require.NoError(t, w.SetTarget(ctx, bundled))
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)
	require.Zero(t, counting.reads.Load())

	write(t, w, branch.Author{}, cm("b", "1"))
	flush(t, w)
	require.Equal(t, int32(1), counting.reads.Load(), "a's file, read back once for b to join it")
	all := show(t, repo, "mirror/team/all.yaml")
	require.Contains(t, all, "name: a")
	require.Contains(t, all, "name: b")

	_, err := git.CommitFiles(repo, map[string]string{"mirror/team/notes.md": "a person's note\n"}, "a person's commit")
	require.NoError(t, err)
	write(t, w, branch.Author{}, cm("c", "1"))
	write(t, w, branch.Author{}, cm("a", "2"))
	flush(t, w)
	all = show(t, repo, "mirror/team/all.yaml")
	require.Contains(t, all, `v: "2"`)
	require.Contains(t, all, "name: b")
	require.Contains(t, all, "name: c")
	require.Equal(t, "a person's note\n", show(t, repo, "mirror/team/notes.md"))
	require.Equal(t, int32(1), counting.reads.Load(), "the reload carried the file it knew")

	restarted := startWorker(t, repo, nil, nil)
	require.NoError(t, restarted.SetTarget(ctx, bundled))
	write(t, restarted, branch.Author{}, cm("d", "1"))
	flush(t, restarted)
	all = show(t, repo, "mirror/team/all.yaml")
	for _, name := range []string{"a", "b", "c", "d"} {
		require.Contains(t, all, "name: "+name)
	}
}
