package branch

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func pendingCM(name, value string) (manifest.ObjectID, []byte) {
	id := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: name}
	return id, fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: team\ndata:\n  v: %q\n", name, value)
}

// After a load that expected only a's rendering, b and c are pending; each
// window then confirms what it renders and reads the rest unless it is a
// replay's window of no-ops.
func TestAWindowConfirmsWhatItRendersAndReadsTheRestUnlessItIsAReplaysNoOps(t *testing.T) {
	aID, a := pendingCM("a", "1")
	bID, b := pendingCM("b", "1")
	cID, c := pendingCM("c", "1")
	_, b2 := pendingCM("b", "2")
	key := TargetKey{Namespace: "team", Name: "mirror"}
	upsert := func(id manifest.ObjectID, yaml []byte) Write { return Write{ID: id, YAML: yaml, Replay: true} }
	for _, tt := range []struct {
		name      string
		writes    []Write
		sweep     bool
		reads     int
		pending   int
		releases  int
		confirmed []manifest.ObjectID
	}{
		{name: "a replay's no-op confirms b and leaves c pending", writes: []Write{upsert(bID, b)}, pending: 1,
			confirmed: []manifest.ObjectID{bID}},
		{name: "a replay's no-ops confirm everything: the forge may let go", writes: []Write{upsert(bID, b), upsert(cID, c)},
			releases: 1, confirmed: []manifest.ObjectID{bID, cID}},
		{name: "a changed object reads every pending file", writes: []Write{upsert(bID, b2)}, reads: 2, releases: 1,
			confirmed: []manifest.ObjectID{bID, cID}},
		{name: "a live no-op reads what is left: the acceptance gate sees every file",
			writes: []Write{{ID: bID, YAML: b}}, reads: 1, releases: 1, confirmed: []manifest.ObjectID{bID, cID}},
		{name: "a sensitive write reads every pending file", writes: []Write{{ID: bID, YAML: b, Sensitive: true, Replay: true}},
			reads: 2, releases: 1, confirmed: []manifest.ObjectID{bID, cID}},
		{name: "a delete reads every pending file", writes: []Write{{ID: aID, Replay: true}}, reads: 2, releases: 1,
			confirmed: []manifest.ObjectID{bID, cID}},
		{name: "a sweep reads what is left", writes: []Write{upsert(bID, b)}, sweep: true, reads: 1, releases: 1,
			confirmed: []manifest.ObjectID{bID, cID}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			forge := &treeForge{files: map[string][]byte{"mirror/a.yaml": a, "mirror/b.yaml": b, "mirror/c.yaml": c}}
			s := newBranchState(forge, "main")
			s.setTarget(Target{Key: key, Path: "mirror"})
			s.expect([]rendering{{Content: a, ID: aID}})
			require.NoError(t, s.ensureLoaded(context.Background(), key))
			require.Equal(t, 2, s.targets[key].index.PendingCount())
			require.Zero(t, forge.released, "the forge keeps its blobs while files are pending")

			win := newWindow(key, Author{}, time.Time{})
			for _, wr := range tt.writes {
				win.add(wr, time.Time{})
			}
			if tt.sweep {
				win.addSweep(Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"},
					Present: []manifest.ObjectID{aID, bID, cID}}, true, time.Time{})
			}
			require.NoError(t, s.settle(context.Background(), win))

			ix := s.targets[key].index
			require.Equal(t, tt.reads, forge.reads, "blobs read")
			require.Equal(t, tt.pending, ix.PendingCount(), "files left pending")
			require.Equal(t, tt.releases, forge.released)
			for _, id := range tt.confirmed {
				_, found := ix.Lookup(id)
				require.True(t, found, id.Name)
			}
			require.NoError(t, ix.Check())
		})
	}
}

// A replay's window judged to change nothing is planned with files still
// pending; when the planner changes something after all (here it moves an
// object out of a directory no clone can check out), the pending files are
// read and the window planned again, so no plan that writes is made with
// files unread.
func TestAPlanThatWritesAfterAllReadsThePendingFilesFirst(t *testing.T) {
	aID, a := pendingCM("a", "1")
	bID, b := pendingCM("b", "1")
	_, c := pendingCM("c", "1")
	key := TargetKey{Namespace: "team", Name: "mirror"}
	long := "mirror/" + strings.Repeat("x", manifest.MaxSegmentBytes+1) + "/b.yaml"
	forge := &treeForge{files: map[string][]byte{"mirror/a.yaml": a, long: b, "mirror/c.yaml": c}}
	s := newBranchState(forge, "main")
	s.setTarget(Target{Key: key, Path: "mirror"})
	s.expect([]rendering{{Content: a, ID: aID}})
	require.NoError(t, s.ensureLoaded(context.Background(), key))
	require.Equal(t, 2, s.targets[key].index.PendingCount())

	win := newWindow(key, Author{}, time.Time{})
	win.add(Write{ID: bID, YAML: b, Replay: true}, time.Time{})
	win.replaying = true
	plan, err := s.planSettled(context.Background(), win)
	require.NoError(t, err)
	require.NotEmpty(t, plan.files, "b is moved out of the long directory")
	require.Zero(t, s.targets[key].index.PendingCount(), "c was read before the plan that writes")
	require.Equal(t, 1, forge.reads)
}
