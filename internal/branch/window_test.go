package branch

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func TestASteadyStreamStillClosesTheWindow(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	silence := 5 * time.Second
	win := newWindow(TargetKey{Name: "t"}, Author{}, start)
	for i := range 30 { // a change every 4 s keeps the silence from ever passing
		win.add(testWrite(fmt.Sprint(i)), start.Add(time.Duration(i)*4*time.Second))
	}
	require.Equal(t, start.Add(20*time.Second), win.closesAt(silence), "four silences after it opened")

	quiet := newWindow(TargetKey{Name: "t"}, Author{}, start)
	quiet.add(testWrite("a"), start.Add(time.Second))
	require.Equal(t, start.Add(6*time.Second), quiet.closesAt(silence), "a quiet window closes by silence")

	require.Equal(t, 10*time.Minute, maxWindowAge(5*time.Minute), "at most ten minutes")
	require.Equal(t, 4*time.Second, maxWindowAge(time.Second))
	require.Equal(t, time.Hour, maxWindowAge(time.Hour), "never less than one silence")
}

func TestAnUnfinishedReplayHoldsTheWindowPastAShortSilence(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	silence := time.Millisecond
	win := newWindow(TargetKey{Name: "t"}, Author{}, start)
	replayed := testWrite("a")
	replayed.Replay = true
	win.add(replayed, start)
	require.Equal(t, start.Add(replaySilence), win.closesAt(silence), "a replay's window outlasts a 1 ms silence")

	swept := newWindow(TargetKey{Name: "t"}, Author{}, start)
	swept.addSweep(Sweep{}, true, start)
	require.Equal(t, start.Add(replaySilence), swept.closesAt(silence), "so does one stream's sweep while others replay")

	live := newWindow(TargetKey{Name: "t"}, Author{}, start)
	live.add(testWrite("b"), start)
	live.addSweep(Sweep{}, false, start)
	require.Equal(t, start.Add(silence), live.closesAt(silence), "the last sweep of a replay does not hold")

	require.Equal(t, 10*time.Second, heldSilence(10*time.Second, true), "a longer commit window stays")
}

func TestPendingWindowsOfOneTargetAndAuthorMerge(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := TargetKey{Name: "a"}, TargetKey{Name: "b"}
	alice := Author{Name: "alice", Kind: AuthorUser}
	pending := func(target TargetKey, author Author, names ...string) *window {
		win := newWindow(target, author, now)
		for _, n := range names {
			win.add(testWrite(n), now)
		}
		return win
	}
	withSweep := pending(a, Author{}, "swept")
	withSweep.addSweep(Sweep{}, false, now)
	w := &Core{conf: CoreConfig{BufferMax: 1 << 20}, pending: []*window{
		pending(a, Author{}, "1", "2"),
		pending(b, Author{}, "3"),
		pending(a, Author{}, "2", "4"), // merges into the first: another target between is fine
		pending(a, alice, "5"),         // another author: its own commit
		pending(a, Author{}, "6"),      // behind alice's window: must not jump ahead of it
		withSweep,                      // a sweep never merges into an earlier window
	}}
	w.coalesce()
	var got []string
	for _, win := range w.pending {
		got = append(got, fmt.Sprintf("%s/%s:%d", win.target.Name, win.author.Name, len(win.writes)))
	}
	require.Equal(t, []string{"a/:3", "b/:1", "a/alice:1", "a/:1", "a/:1"}, got)
}

func TestAMergeStaysWithinTheBufferLimit(t *testing.T) {
	now := time.Now()
	first, second := newWindow(TargetKey{Name: "a"}, Author{}, now), newWindow(TargetKey{Name: "a"}, Author{}, now)
	first.add(testWrite("1"), now)
	second.add(testWrite("2"), now)
	require.True(t, first.absorbs(second, first.bytes+second.bytes))
	require.False(t, first.absorbs(second, first.bytes+second.bytes-1))
}

func testWrite(name string) Write {
	return Write{ID: manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name},
		YAML: []byte("kind: ConfigMap\nmetadata:\n  name: " + name + "\n")}
}

func TestASweepDropsAStaleWriteOfAnObjectTheReplayDidNotFind(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	win := newWindow(TargetKey{Name: "t"}, Author{}, now)
	gone, stays, other := testWrite("gone"), testWrite("stays"), testWrite("other")
	other.ID.Namespace = "elsewhere"
	for _, wr := range []Write{gone, stays, other} {
		win.add(wr, now)
	}
	win.addSweep(Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "ns"}, Present: []manifest.ObjectID{stays.ID}}, false, now)
	var names []string
	for _, wr := range win.orderedWrites() {
		names = append(names, wr.ID.Name)
	}
	require.Equal(t, []string{"stays", "other"}, names, "the write of gone is older than the replay that did not find it")
	require.Equal(t, len(stays.YAML)+len(other.YAML), win.bytes)
}

func TestAWindowKeepsTheToolsOfEveryChangeItMergesUntilADelete(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	with := func(w Write, tools ...string) Write {
		w.ChangedWith = tools
		return w
	}
	deleted := func(w Write) Write {
		w.YAML = nil
		return w
	}
	for _, tc := range []struct {
		name   string
		writes []Write
		want   []string
	}{
		{"one change", []Write{with(testWrite("a"), "kubectl-edit")}, []string{"kubectl-edit"}},
		{"two tools change one object", []Write{with(testWrite("a"), "kubectl-edit"), with(testWrite("a"), "helm"),
			with(testWrite("a"), "kubectl-edit")}, []string{"kubectl-edit", "helm"}},
		{"a delete names nobody", []Write{with(testWrite("a"), "helm"), deleted(testWrite("a"))}, nil},
		{"a re-creation after a delete names only its own tool", []Write{with(testWrite("a"), "helm"),
			deleted(testWrite("a")), with(testWrite("a"), "kubectl-create")}, []string{"kubectl-create"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			win := newWindow(TargetKey{Name: "t"}, Author{}, now)
			for _, w := range tc.writes {
				win.add(w, now)
			}
			require.Equal(t, tc.want, win.orderedWrites()[0].ChangedWith)
		})
	}
}

// TestAWindowHoldsABoundedNumberOfRenderedTrees: past maxWindowTrees a
// write joins without its tree (the planner parses it once); a write that
// replaces one with a tree frees its place.
func TestAWindowHoldsABoundedNumberOfRenderedTrees(t *testing.T) {
	w := newWindow(coreTo, alice, t0)
	tree := func(name string) Write {
		wr := change(name)
		wr.Node = &yaml.Node{Kind: yaml.MappingNode}
		return wr
	}
	for i := range maxWindowTrees + 1 {
		w.add(tree(fmt.Sprint("cm-", i)), t0)
	}
	require.Nil(t, writeOf(w, tree(fmt.Sprint("cm-", maxWindowTrees)).ID).Node, "one past the bound")
	require.NotNil(t, writeOf(w, tree("cm-0").ID).Node)

	w.add(change("cm-0"), t0) // the object's last write carries no tree
	w.add(tree("cm-extra"), t0)
	require.NotNil(t, writeOf(w, tree("cm-extra").ID).Node, "the freed place is taken")
	require.Equal(t, maxWindowTrees, w.trees)
}

// writeOf is w's write of id (the zero Write when it has none).
func writeOf(w *window, id manifest.ObjectID) Write {
	wr, _ := w.write(id)
	return wr
}

// TestAWriteIndexFindsEachWriteByItsObject: the window's index by hash
// (keyhash, which tells apart two objects of one hash) finds each write's
// place.
func TestAWriteIndexFindsEachWriteByItsObject(t *testing.T) {
	writes := []Write{{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "team", Name: "a"}},
		{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "team", Name: "b"}}}
	x := newWriteIndex(2)
	x.set(writes, 0)
	_, found := x.find(writes, keyOf(writes[1].ID))
	require.False(t, found, "b has no write yet")
	x.set(writes, 1)
	i, found := x.find(writes, keyOf(writes[0].ID))
	require.True(t, found)
	require.Equal(t, 0, i)
	i, found = x.find(writes, keyOf(writes[1].ID))
	require.True(t, found)
	require.Equal(t, 1, i)
}
