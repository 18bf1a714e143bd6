package branch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// A placement set on a running worker applies to the next new object, and
// a later change never moves a file already written.
func TestPlacementReachesTheWorkerAndNeverMovesAFile(t *testing.T) {
	ctx := context.Background()
	w := newWorker(t, "placement", nil, nil)
	placed := manifest.Placement{ByType: map[string]string{"v1/configmaps": "{namespace}/config/{name}.yaml"}}
	require.NoError(t, w.SetTarget(ctx, branch.Target{Key: target, Path: "mirror", Placement: placed}))
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)
	require.Contains(t, show(t, "placement", "mirror/team/config/a.yaml"), `v: "1"`)

	bundled := manifest.Placement{Default: "{namespace}/all.yaml"}
	require.NoError(t, w.SetTarget(ctx, branch.Target{Key: target, Path: "mirror", Placement: bundled}))
	write(t, w, branch.Author{}, cm("a", "2"))
	write(t, w, branch.Author{}, cm("b", "1"))
	write(t, w, branch.Author{}, cm("c", "1"))
	flush(t, w)
	require.Contains(t, show(t, "placement", "mirror/team/config/a.yaml"), `v: "2"`)
	all := show(t, "placement", "mirror/team/all.yaml")
	require.Contains(t, all, "name: b")
	require.Contains(t, all, "---\n")
	require.Contains(t, all, "name: c")
	require.NotContains(t, all, "name: a")
}
