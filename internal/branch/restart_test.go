package branch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// blobCounting counts the blobs a worker reads from the forge.
type blobCounting struct {
	forges.Forge
	reads atomic.Int32
}

func (b *blobCounting) Blob(ctx context.Context, id string) ([]byte, error) {
	b.reads.Add(1)
	return b.Forge.Blob(ctx, id)
}

func TestAfterARestartOnlyFilesThatDifferAreRead(t *testing.T) {
	w := newWorker(t, "restart-reads", nil, nil)
	for i := range 40 {
		write(t, w, branch.Author{}, cm(fmt.Sprintf("cm-%d", i), "1"))
	}
	flush(t, w)

	counting := &blobCounting{}
	w = startWorker(t, "restart-reads", func(f forges.Forge) forges.Forge { counting.Forge = f; return counting }, nil)
	for i := range 40 {
		value := "1"
		if i == 7 {
			value = "2"
		}
		write(t, w, branch.Author{}, cm(fmt.Sprintf("cm-%d", i), value))
	}
	flush(t, w)

	require.Equal(t, int32(1), counting.reads.Load(), "only the changed object's file is read back")
	require.Len(t, commits(t, "restart-reads"), 2)
	require.Contains(t, show(t, "restart-reads", "mirror/team/configmaps/cm-7.yaml"), `v: "2"`)
}
