package gogit

import (
	"io"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

// TestEncodeTreeWritesWhatGoGitWrites: a tree encoded at its exact size is
// byte for byte go-git's encoding of it, for every mode a tree holds.
func TestEncodeTreeWritesWhatGoGitWrites(t *testing.T) {
	tree := &object.Tree{Entries: []object.TreeEntry{
		{Name: "app.yaml", Mode: filemode.Regular, Hash: plumbing.NewHash("ce013625030ba8dba906f756967f9e9ca394464a")},
		{Name: "run.sh", Mode: filemode.Executable, Hash: plumbing.NewHash("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")},
		{Name: "team-a", Mode: filemode.Dir, Hash: plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")},
		{Name: "link", Mode: filemode.Symlink, Hash: plumbing.NewHash("ce013625030ba8dba906f756967f9e9ca394464a")},
		{Name: "vendor", Mode: filemode.Submodule, Hash: plumbing.NewHash("1111111111111111111111111111111111111111")},
		{Name: "team-a.yaml", Mode: filemode.Regular, Hash: plumbing.NewHash("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")},
	}}
	sort.Sort(object.TreeEntrySorter(tree.Entries))
	want := &plumbing.MemoryObject{}
	require.NoError(t, tree.Encode(want))

	got, err := encodeTree(tree.Entries)
	require.NoError(t, err)
	require.Equal(t, plumbing.TreeObject, got.Type())
	require.Equal(t, want.Hash(), got.Hash())
	require.Equal(t, want.Size(), got.Size())
	r, err := got.Reader()
	require.NoError(t, err)
	content, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Len(t, content, cap(got.content), "the buffer is exactly the tree's size")

	_, err = encodeTree([]object.TreeEntry{{Name: "a\x00b", Mode: filemode.Regular}})
	require.ErrorContains(t, err, "malformed file name")
}
