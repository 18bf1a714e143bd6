package branch

import (
	"context"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// treeForge is a branch holding files, read through Tree and Blob only;
// released counts ReleaseBlobs.
type treeForge struct {
	forges.Forge
	files    map[string][]byte
	reads    int
	released int
}

func (f *treeForge) Head(context.Context, string) (string, error) {
	return "0123456789012345678901234567890123456789", nil
}

func (f *treeForge) Tree(context.Context, string, string) ([]forges.TreeEntry, error) {
	var out []forges.TreeEntry
	for p, c := range f.files {
		out = append(out, forges.TreeEntry{Path: p, BlobID: blobID(c), Mode: forges.ModeRegular})
	}
	return out, nil
}

func (f *treeForge) Blob(_ context.Context, id string) ([]byte, error) {
	f.reads++
	for _, c := range f.files {
		if blobID(c) == id {
			return c, nil
		}
	}
	return nil, forges.ErrNotFound
}

func (f *treeForge) ReleaseBlobs() { f.released++ }

func blobID(c []byte) string { return plumbing.ComputeHash(plumbing.BlobObject, c).String() }

// The contents the worker is about to write serve the one index load that
// follows: the ones Git has are not read, and neither the cache nor the
// index keeps their bytes (the index knows the file as the rendering it
// is); the others are dropped with the load; then the forge may let its
// blobs go.
func TestSeedsServeOneIndexLoadAndNoneIsKept(t *testing.T) {
	same, changed, fresh := []byte("a: 1\n"), []byte("b: 2\n"), []byte("c: 3\n")
	forge := &treeForge{files: map[string][]byte{"mirror/a.yaml": same, "mirror/b.yaml": []byte("b: 1\n")}}
	s := newBranchState(forge, "main")
	key := TargetKey{Namespace: "team", Name: "mirror"}
	s.setTarget(Target{Key: key, Path: "mirror"})

	s.expect([]rendering{{Content: same}, {Content: changed}, {Content: fresh}})
	require.NoError(t, s.ensureLoaded(context.Background(), key))
	require.Zero(t, forge.reads, "the file that differs is pending until a plan needs it")
	require.NoError(t, s.resolvePending(context.Background(), s.targets[key]))

	require.Equal(t, 1, forge.reads, "only the file that differs is read")
	require.Nil(t, s.expected)
	for _, c := range [][]byte{same, changed, fresh} {
		_, cached := s.blobs.get(blobID(c))
		require.False(t, cached, "a seed Git does not have is not kept")
	}
	require.Equal(t, 1, forge.released, "once the pending file was read")
}

// After a restart the files Git holds are the renderings the worker is
// about to write: the index takes each as its object's rendering without
// parsing it, and finds it by identity as a parse would.
func TestAnExpectedRenderingIsIndexedWithoutParsing(t *testing.T) {
	rendered := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: team\ndata:\n  k: v\n")
	formatted := []byte("# kept by a person\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: team\n")
	forge := &treeForge{files: map[string][]byte{"mirror/a.yaml": rendered, "mirror/b.yaml": formatted}}
	s := newBranchState(forge, "main")
	key := TargetKey{Namespace: "team", Name: "mirror"}
	s.setTarget(Target{Key: key, Path: "mirror"})
	a := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: "a"}

	s.expect([]rendering{{Content: rendered, ID: a}})
	require.NoError(t, s.ensureLoaded(context.Background(), key))
	require.NoError(t, s.resolvePending(context.Background(), s.targets[key]))

	ix := s.targets[key].index
	require.Equal(t, 1, ix.Parses(), "only the file a person formatted is parsed")
	for id, want := range map[manifest.ObjectID]string{a: "mirror/a.yaml", {Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "b"}: "mirror/b.yaml"} {
		got, ok := ix.Lookup(id)
		require.True(t, ok, id.Name)
		require.Equal(t, want, got)
	}
	require.NoError(t, ix.Check(), "the rendering counts once, as the parse would")
}

// holdingForge is a treeForge that keeps fetched blobs (forges.BlobHolder):
// it records what it was told it need not keep while it lists the tree.
type holdingForge struct {
	treeForge
	held       func(id string) ([]byte, bool)
	heldAtTree map[string]bool
}

func (f *holdingForge) HoldBlobs(held func(id string) ([]byte, bool)) { f.held = held }

func (f *holdingForge) Tree(ctx context.Context, commit, prefix string) ([]forges.TreeEntry, error) {
	f.heldAtTree = map[string]bool{}
	for _, c := range f.files {
		if f.held == nil {
			break
		}
		if content, ok := f.held(blobID(c)); ok {
			f.heldAtTree[string(content)] = true
		}
	}
	return f.treeForge.Tree(ctx, commit, prefix)
}

// A forge that keeps fetched blobs is told, for the read only, which of
// them the worker holds: the renderings it is about to write, answered
// with their bytes, so its fetch need keep none of them.
func TestTheRenderingsAreHeldForTheReadOnly(t *testing.T) {
	same, changed := []byte("a: 1\n"), []byte("b: 2\n")
	forge := &holdingForge{treeForge: treeForge{files: map[string][]byte{"mirror/a.yaml": same, "mirror/b.yaml": []byte("b: 1\n")}}}
	s := newBranchState(forge, "main")
	key := TargetKey{Namespace: "team", Name: "mirror"}
	s.setTarget(Target{Key: key, Path: "mirror"})

	s.expect([]rendering{{Content: same}, {Content: changed}})
	require.NoError(t, s.ensureLoaded(context.Background(), key))
	require.NoError(t, s.resolvePending(context.Background(), s.targets[key]))

	require.Equal(t, map[string]bool{string(same): true}, forge.heldAtTree, "the tree's file the worker holds, with its bytes")
	require.Nil(t, forge.held, "forgotten once the read is done")
	require.Equal(t, 1, forge.reads, "only the file that differs is read")
}
