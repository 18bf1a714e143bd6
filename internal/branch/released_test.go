package branch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// The index keeps the worker's renderings by sum, not bytes. A reload (a
// conflict moved the head) takes every file whose blob id did not change
// from the index it replaces, with no read and no parse; a plan that needs
// a let-go file's bytes (an object placed beside another in one file) reads
// just that file back and plans again.
func TestAReloadCarriesTheIndexAndAPlanReadsBackOnlyWhatItNeeds(t *testing.T) {
	ctx := context.Background()
	key := TargetKey{Namespace: "team", Name: "mirror"}
	aID := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: "a"}
	bID := aID
	bID.Name = "b"
	a := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: team\n")
	b := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: team\n")
	forge := &treeForge{files: map[string][]byte{"mirror/team/all.yaml": a, "mirror/README.md": []byte("# mirror\n")}}
	s := newBranchState(forge, "main")
	s.setTarget(Target{Key: key, Path: "mirror", Placement: manifest.Placement{Default: "{namespace}/all.yaml"}})
	s.expect([]rendering{{Content: a, ID: aID}})
	require.NoError(t, s.ensureLoaded(ctx, key))
	require.Equal(t, []string{"mirror/team/all.yaml"}, s.targets[key].index.Released())

	s.targets[key].at = "a commit before a person's"
	require.NoError(t, s.ensureLoaded(ctx, key))
	ix := s.targets[key].index
	require.Equal(t, []string{"mirror/team/all.yaml"}, ix.Released(), "carried as it was known")
	require.Zero(t, ix.Parses())
	require.Zero(t, ix.PendingCount())
	require.Zero(t, forge.reads)

	win := newWindow(key, Author{}, time.Time{})
	win.add(Write{ID: bID, YAML: b}, time.Time{})
	plan, err := s.planSettled(ctx, win)
	require.NoError(t, err)
	require.Equal(t, 1, forge.reads, "the file the new object joins, once")
	require.Len(t, plan.files, 1)
	require.Equal(t, "mirror/team/all.yaml", plan.files[0].Path)
	require.Equal(t, string(a)+"---\n"+string(b), string(plan.files[0].Content))
	require.Equal(t, blobID(a), plan.files[0].BaseBlob)
}
