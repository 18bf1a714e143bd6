package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func TestOnlyManifestFilesMayBePending(t *testing.T) {
	for _, tt := range []struct {
		root, path string
		want       bool
	}{
		{"mirror", "mirror/team/configmaps/a.yaml", true},
		{"mirror", "mirror/a.yml", true},
		{".", "a.yaml", true},
		{"mirror", "mirror/kustomization.yaml", false},
		{"mirror", "mirror/.sops.yaml", false},
		{"mirror", "mirror/.github/workflow.yaml", false},
		{"mirror", "mirror/README.md", false},
		{"mirror", "other/a.yaml", false},
	} {
		require.Equal(t, tt.want, manifest.Deferrable(tt.root, tt.path), tt.path)
	}
	ix := newIndex(t, "mirror", nil)
	require.Error(t, ix.Defer("mirror/kustomization.yaml", "k"), "a kustomization is always read")
}

// A pending file is there, with content unknown: it holds no object the
// index can find, and nothing is parsed.
func TestAPendingFileIsPresentButHoldsNothingKnown(t *testing.T) {
	ix := newIndex(t, "mirror", withReadme("mirror", nil))
	require.NoError(t, ix.Defer("mirror/team/configmaps/a.yaml", "blob-a"))

	require.True(t, ix.Has("mirror/team/configmaps/a.yaml"))
	_, found := ix.Lookup(configMapID("team", "a"))
	require.False(t, found)
	require.Equal(t, 1, ix.PendingCount())
	require.Equal(t, map[string]string{"mirror/team/configmaps/a.yaml": "blob-a"}, ix.Pending())
	require.Zero(t, ix.Parses())
}

// Each event acts on one index, in order; the expectations after it say
// what the index then knows.
func TestPendingFilesAreConfirmedResolvedOrReplaced(t *testing.T) {
	a, b := configMapYAML("team", "a", "1"), configMapYAML("team", "b", "1")
	type step struct {
		name string
		act  func(t *testing.T, ix *manifest.Index)
		// found is the path Lookup gives each object ("" for none).
		found   map[string]string
		pending int
		parses  int
		check   bool // Check passes
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{name: "confirmed by blob id: indexed as the rendering, not parsed", steps: []step{
			{name: "defer", act: deferFiles(map[string]string{"mirror/a.yaml": "blob-a", "mirror/b.yaml": "blob-b"}),
				found: map[string]string{"a": "", "b": ""}, pending: 2, check: true},
			{name: "confirm a", act: confirm("blob-a", a, "a", "mirror/a.yaml"),
				found: map[string]string{"a": "mirror/a.yaml", "b": ""}, pending: 1, check: true},
			{name: "an unknown blob id confirms nothing", act: confirm("blob-x", b, "b", ""),
				found: map[string]string{"a": "mirror/a.yaml", "b": ""}, pending: 1, check: true},
		}},
		{name: "two pending files with one blob id are resolved, not confirmed", steps: []step{
			{name: "defer", act: deferFiles(map[string]string{"mirror/a.yaml": "blob-a", "mirror/copy/a.yaml": "blob-a"}),
				found: map[string]string{"a": ""}, pending: 2, check: true},
			{name: "confirm refuses to pick one", act: confirm("blob-a", a, "a", ""),
				found: map[string]string{"a": ""}, pending: 2, check: true},
			{name: "resolve parses both: a duplicate", act: resolve(map[string]string{"mirror/a.yaml": a, "mirror/copy/a.yaml": a}),
				found: map[string]string{"a": "mirror/a.yaml"}, parses: 2, check: false},
		}},
		{name: "text that is not one plain document is resolved", steps: []step{
			{name: "defer", act: deferFiles(map[string]string{"mirror/ab.yaml": "blob-ab"}), found: map[string]string{"a": ""}, pending: 1, check: true},
			{name: "confirm declines two documents", act: confirm("blob-ab", a+"---\n"+b, "a", ""),
				found: map[string]string{"a": ""}, pending: 1, check: true},
			{name: "resolve", act: resolve(map[string]string{"mirror/ab.yaml": a + "---\n" + b}),
				found: map[string]string{"a": "mirror/ab.yaml", "b": "mirror/ab.yaml"}, parses: 2, check: true},
		}},
		{name: "a file added or removed at a pending path is no longer pending", steps: []step{
			{name: "defer", act: deferFiles(map[string]string{"mirror/a.yaml": "blob-a", "mirror/b.yaml": "blob-b"}),
				found: map[string]string{"a": "", "b": ""}, pending: 2, check: true},
			{name: "add a", act: func(t *testing.T, ix *manifest.Index) { require.NoError(t, ix.Add("mirror/a.yaml", []byte(a))) },
				found: map[string]string{"a": "mirror/a.yaml", "b": ""}, pending: 1, parses: 1, check: true},
			{name: "remove b", act: func(t *testing.T, ix *manifest.Index) { ix.Remove("mirror/b.yaml") },
				found: map[string]string{"a": "mirror/a.yaml", "b": ""}, parses: 1, check: true},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ix := newIndex(t, "mirror", nil)
			for _, s := range tt.steps {
				s.act(t, ix)
				for name, want := range s.found {
					got, _ := ix.Lookup(configMapID("team", name))
					require.Equal(t, want, got, "%s: %s", s.name, name)
				}
				require.Equal(t, s.pending, ix.PendingCount(), s.name)
				require.Equal(t, s.parses, ix.Parses(), s.name)
				require.Equal(t, s.check, ix.Check() == nil, s.name)
			}
		})
	}
}

func deferFiles(files map[string]string) func(*testing.T, *manifest.Index) {
	return func(t *testing.T, ix *manifest.Index) {
		for p, id := range files {
			require.NoError(t, ix.Defer(p, id))
		}
	}
}

func confirm(blobID, content, name, want string) func(*testing.T, *manifest.Index) {
	return func(t *testing.T, ix *manifest.Index) {
		got, ok := ix.Confirm(blobID, []byte(content), configMapID("team", name))
		require.Equal(t, want, got)
		require.Equal(t, want != "", ok)
	}
}

func resolve(files map[string]string) func(*testing.T, *manifest.Index) {
	return func(t *testing.T, ix *manifest.Index) {
		contents := map[string][]byte{}
		for p, c := range files {
			contents[p] = []byte(c)
		}
		require.NoError(t, ix.Resolve(contents))
	}
}

func TestResolvingAFileThatIsNotPendingFails(t *testing.T) {
	ix := newIndex(t, "mirror", map[string]string{"mirror/a.yaml": configMapYAML("team", "a", "1")})
	require.Error(t, ix.Resolve(map[string][]byte{"mirror/a.yaml": []byte(configMapYAML("team", "a", "2"))}))
}

// A new object is never placed at a pending path as if it were free: its
// content is unknown, and writing there would drop it. The plan fails
// until the file is read; then the object joins what the file holds.
func TestANewObjectIsNeverPlacedAtAPendingPath(t *testing.T) {
	ix := newIndex(t, "mirror", withReadme("mirror", nil))
	taken, err := manifest.CanonicalPath("mirror", configMapID("team", "new"), false)
	require.NoError(t, err)
	require.NoError(t, ix.Defer(taken, "blob-other"))

	_, err = manifest.Plan(ix, []manifest.Op{upsert(configMapID("team", "new"), configMapYAML("team", "new", "1"))})
	require.ErrorContains(t, err, "not read yet")

	other := configMapYAML("team", "other", "1")
	require.NoError(t, ix.Resolve(map[string][]byte{taken: []byte(other)}))
	result := plan(t, ix, upsert(configMapID("team", "new"), configMapYAML("team", "new", "1")))
	require.Equal(t, map[string]string{taken: other + "---\n" + configMapYAML("team", "new", "1")}, contents(result),
		"the file a person put there keeps what it held")
}
