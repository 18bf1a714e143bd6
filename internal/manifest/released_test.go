package manifest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// planApplied plans ops on ix with planner and folds the result in, as a
// commit that landed does.
func planApplied(t *testing.T, planner manifest.Planner, ix *manifest.Index, ops ...manifest.Op) manifest.Result {
	t.Helper()
	res, err := planner.Plan(ix, ops)
	require.NoError(t, err)
	require.NoError(t, ix.Apply(res))
	return res
}

// A file that is the operator's rendering of one object is kept by its
// document and a sum of its bytes: a new rendering replaces it whole, the
// same rendering is a no-op and a delete deletes it, all without its bytes.
func TestARenderedFileIsKeptByItsSumNotItsBytes(t *testing.T) {
	const p = "mirror/team/configmaps/a.yaml"
	a := configMapID("team", "a")
	ix := newIndex(t, "mirror", withReadme("mirror", nil))

	planApplied(t, manifest.Planner{}, ix, rendered(t, a, configMapYAML("team", "a", "1")))
	require.Equal(t, []string{p}, ix.Released())
	found, ok := ix.Lookup(a)
	require.True(t, ok)
	require.Equal(t, p, found)
	_, ok = ix.Document(a)
	require.False(t, ok, "the bytes are let go")

	same := planApplied(t, manifest.Planner{}, ix, rendered(t, a, configMapYAML("team", "a", "1")))
	require.Empty(t, same.Changes)

	changed := planApplied(t, manifest.Planner{}, ix, rendered(t, a, configMapYAML("team", "a", "2")))
	require.Equal(t, map[string]string{p: configMapYAML("team", "a", "2")}, contents(changed))
	require.Equal(t, []string{p}, ix.Released())

	gone := planApplied(t, manifest.Planner{}, ix, manifest.Delete{ID: a})
	require.Equal(t, map[string]string{p: "<deleted>"}, contents(gone))
	require.Empty(t, ix.Released())
	require.Zero(t, gone.Parses())
}

// The few plans that need a released file's old text ask for it and plan
// nothing; with the bytes restored they plan exactly what an index that
// never let them go plans.
func TestAPlanThatNeedsALetGoFileAsksForItAndThenPlansAsBefore(t *testing.T) {
	a, b := configMapID("team", "a"), configMapID("team", "b")
	together := manifest.Planner{Placement: manifest.Placement{Default: "{namespace}/all.yaml"}}
	for _, tt := range []struct {
		name    string
		planner manifest.Planner
		path    string
		ops     []manifest.Op
	}{
		{"a write that is not the operator's rendering", manifest.Planner{}, "mirror/team/configmaps/a.yaml",
			[]manifest.Op{upsert(a, configMapYAML("team", "a", "2"))}},
		{"a new object placed beside the one the file holds", together, "mirror/team/all.yaml",
			[]manifest.Op{rendered(t, b, configMapYAML("team", "b", "1"))}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := configMapYAML("team", "a", "1")
			ix := newIndex(t, "mirror", withReadme("mirror", nil))
			planApplied(t, tt.planner, ix, rendered(t, a, first))
			require.Equal(t, []string{tt.path}, ix.Released())

			_, err := tt.planner.Plan(ix, tt.ops)
			var needed *manifest.ContentNeededError
			require.True(t, errors.As(err, &needed), "got %v", err)
			require.Equal(t, []string{tt.path}, needed.Paths)

			require.Error(t, ix.Restore(map[string][]byte{tt.path: []byte(first + "# not it\n")}),
				"content that is not the file the index describes")
			require.NoError(t, ix.Restore(map[string][]byte{tt.path: []byte(first)}))
			require.Empty(t, ix.Released())
			got, err := tt.planner.Plan(ix, tt.ops)
			require.NoError(t, err)
			never := newIndex(t, "mirror", withReadme("mirror", map[string]string{tt.path: first}))
			require.Empty(t, never.Released(), "a file read and parsed keeps its bytes")
			want, err := tt.planner.Plan(never, tt.ops)
			require.NoError(t, err)
			require.Equal(t, contents(want), contents(got))
			require.NotEmpty(t, got.Changes)
		})
	}
}

// A file freed by a delete in the same plan takes the new object without
// the old bytes: nothing of them is kept.
func TestAFileFreedInThePlanTakesANewObjectWithoutItsBytes(t *testing.T) {
	a, b := configMapID("team", "a"), configMapID("team", "b")
	together := manifest.Planner{Placement: manifest.Placement{Default: "{namespace}/all.yaml"}}
	ix := newIndex(t, "mirror", withReadme("mirror", nil))
	planApplied(t, together, ix, rendered(t, a, configMapYAML("team", "a", "1")))

	res := planApplied(t, together, ix, manifest.Delete{ID: a}, rendered(t, b, configMapYAML("team", "b", "1")))
	require.Equal(t, map[string]string{"mirror/team/all.yaml": configMapYAML("team", "b", "1")}, contents(res))
	require.Equal(t, []string{"mirror/team/all.yaml"}, ix.Released())
}

// A reload takes a file whose blob id did not change from the index it
// replaces, parsed or let go, without reading or parsing it.
func TestCarryTakesAFileFromTheIndexItReplaces(t *testing.T) {
	const p, hand = "mirror/team/configmaps/a.yaml", "mirror/team/b.yaml"
	a, b := configMapID("team", "a"), configMapID("team", "b")
	prior := newIndex(t, "mirror", withReadme("mirror", map[string]string{hand: "# by hand\n" + configMapYAML("team", "b", "1")}))
	planApplied(t, manifest.Planner{}, prior, rendered(t, a, configMapYAML("team", "a", "1")))

	ix := newIndex(t, "mirror", withReadme("mirror", nil))
	require.True(t, ix.Carry(p, prior, p))
	require.True(t, ix.Carry("mirror/team/moved.yaml", prior, hand))
	require.False(t, ix.Carry("mirror/kustomization.yaml", prior, hand), "not a manifest path")
	require.False(t, ix.Carry("mirror/c.yaml", prior, "mirror/none.yaml"), "nothing there")
	require.Zero(t, ix.Parses())
	require.Equal(t, []string{p}, ix.Released())
	for id, want := range map[manifest.ObjectID]string{a: p, b: "mirror/team/moved.yaml"} {
		got, ok := ix.Lookup(id)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	same, err := manifest.Plan(ix, []manifest.Op{rendered(t, a, configMapYAML("team", "a", "1"))})
	require.NoError(t, err)
	require.Empty(t, same.Changes)
	require.NoError(t, ix.Check())
}

// A file read from Git keeps its bytes until a plan finds it to be the
// operator's rendering; the next commit that lands then lets them go.
func TestAFileFoundToBeTheRenderingIsLetGoAtTheNextCommit(t *testing.T) {
	const p = "mirror/team/configmaps/a.yaml"
	a, b := configMapID("team", "a"), configMapID("team", "b")
	ix := newIndex(t, "mirror", withReadme("mirror", map[string]string{p: configMapYAML("team", "a", "1")}))
	require.Empty(t, ix.Released(), "read and parsed: not known to be a rendering")

	res := planApplied(t, manifest.Planner{}, ix, rendered(t, a, configMapYAML("team", "a", "1")), rendered(t, b, configMapYAML("team", "b", "1")))
	require.Equal(t, map[string]string{"mirror/team/configmaps/b.yaml": configMapYAML("team", "b", "1")}, contents(res))
	require.Equal(t, []string{p, "mirror/team/configmaps/b.yaml"}, ix.Released())
}

// An object moved out of a directory too long to check out into a file
// whose bytes the index let go asks for that file, and once it is read
// back moves there beside the object it holds.
func TestAMoveIntoALetGoFileAsksForItFirst(t *testing.T) {
	a, b := configMapID("team", "a"), configMapID("team", "b")
	long := "mirror/" + strings.Repeat("x", manifest.MaxSegmentBytes+1) + "/b.yaml"
	together := manifest.Planner{Placement: manifest.Placement{Default: "{namespace}/all.yaml"}}
	first := configMapYAML("team", "a", "1")
	ix := newIndex(t, "mirror", withReadme("mirror", map[string]string{long: configMapYAML("team", "b", "1")}))
	planApplied(t, together, ix, rendered(t, a, first))
	require.Equal(t, []string{"mirror/team/all.yaml"}, ix.Released())

	ops := []manifest.Op{rendered(t, b, configMapYAML("team", "b", "1"))}
	_, err := together.Plan(ix, ops)
	var needed *manifest.ContentNeededError
	require.True(t, errors.As(err, &needed), "got %v", err)
	require.Equal(t, []string{"mirror/team/all.yaml"}, needed.Paths)

	require.NoError(t, ix.Restore(map[string][]byte{"mirror/team/all.yaml": []byte(first)}))
	res, err := together.Plan(ix, ops)
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"mirror/team/all.yaml": first + "---\n" + configMapYAML("team", "b", "1"),
		long:                   "<deleted>",
	}, contents(res))
}

// A file the gate refuses stays refused when a reload carries it.
func TestACarriedFileKeepsWhatCheckRefusesInIt(t *testing.T) {
	prior := newIndex(t, "mirror", withReadme("mirror", map[string]string{"mirror/bad.yaml": "kind: [\n"}))
	require.Error(t, prior.Check())

	ix := newIndex(t, "mirror", withReadme("mirror", nil))
	require.True(t, ix.Carry("mirror/moved.yaml", prior, "mirror/bad.yaml"))
	err := ix.Check()
	require.Error(t, err)
	require.Contains(t, err.Error(), "mirror/moved.yaml")
}

// A let-go file whose one document the plan replaces takes a new object
// beside it without its old bytes: none of them are kept.
func TestALetGoFileRewrittenInThePlanTakesANewObjectWithoutItsBytes(t *testing.T) {
	a, b := configMapID("team", "a"), configMapID("team", "b")
	together := manifest.Planner{Placement: manifest.Placement{Default: "{namespace}/all.yaml"}}
	ix := newIndex(t, "mirror", withReadme("mirror", nil))
	planApplied(t, together, ix, rendered(t, a, configMapYAML("team", "a", "1")))

	res := planApplied(t, together, ix, rendered(t, a, configMapYAML("team", "a", "2")), rendered(t, b, configMapYAML("team", "b", "1")))
	require.Equal(t, map[string]string{"mirror/team/all.yaml": configMapYAML("team", "a", "2") + "---\n" + configMapYAML("team", "b", "1")}, contents(res))
	a2, ok := ix.Lookup(a)
	require.True(t, ok)
	require.Equal(t, "mirror/team/all.yaml", a2)
}
