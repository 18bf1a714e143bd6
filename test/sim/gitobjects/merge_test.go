package gitobjects_test

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

func TestMergeFilesTakesEachSidesChangesAndRefusesTwoDifferentOnes(t *testing.T) {
	entry := func(b byte) gitobjects.Entry {
		var h plumbing.Hash
		h[0] = b
		return gitobjects.Entry{Mode: filemode.Regular, Hash: h}
	}
	base := gitobjects.Files{"kept": entry(1), "ours-edit": entry(2), "theirs-delete": entry(3), "same": entry(4), "clash": entry(5)}
	ours := gitobjects.Files{"kept": entry(1), "ours-edit": entry(20), "theirs-delete": entry(3), "same": entry(40),
		"clash": entry(50), "ours-new": entry(6)}
	theirs := gitobjects.Files{"kept": entry(1), "ours-edit": entry(2), "same": entry(40), "clash": entry(51), "theirs-new": entry(7)}

	_, conflicts := gitobjects.MergeFiles(base, ours, theirs)
	require.Equal(t, []string{"clash"}, conflicts)

	theirs["clash"] = entry(5)
	merged, conflicts := gitobjects.MergeFiles(base, ours, theirs)
	require.Empty(t, conflicts)
	require.Equal(t, gitobjects.Files{"kept": entry(1), "ours-edit": entry(20), "same": entry(40), "clash": entry(50),
		"ours-new": entry(6), "theirs-new": entry(7)}, merged)
}
