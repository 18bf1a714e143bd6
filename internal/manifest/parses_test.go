package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// rendered is an upsert as the write path makes it: the operator's
// rendering, with the tree its YAML was rendered from (here parsed, which
// Upsert.Node allows; sanitize builds it without parsing).
func rendered(t *testing.T, id manifest.ObjectID, text string) manifest.Upsert {
	t.Helper()
	node, err := yamledit.Decode([]byte(text))
	require.NoError(t, err)
	return manifest.Upsert{ID: id, YAML: []byte(text), Rendered: true, Node: node}
}

// TestTheWritePathParsesEachDocumentOnce counts YAML decodes over commits
// (Plan, then Apply to the index), one after another on the same index.
// Without the rendered tree the desired document, the old one and the
// edited text are each parsed once, the edited text only when it is not
// the desired bytes already. With it nothing rendered is parsed back, a
// document the operator wrote is replaced without parsing it, and a
// document a person formatted is parsed once and kept parsed in the index.
// The siblings in the file and the index update parse nothing.
func TestTheWritePathParsesEachDocumentOnce(t *testing.T) {
	first, second, added := configMapID("team-a", "first"), configMapID("team-a", "second"), configMapID("team-a", "new")
	tests := []struct {
		name       string
		ops        []manifest.Op // one commit each
		planParses []int
	}{
		{"unrendered, an operator-written document: desired and old",
			[]manifest.Op{upsert(second, configMapYAML("team-a", "second", "changed"))}, []int{2}},
		{"unrendered, a commented document: desired, old and the edited text",
			[]manifest.Op{upsert(first, configMapYAML("team-a", "first", "changed"))}, []int{3}},
		{"unrendered, a new object: desired",
			[]manifest.Op{upsert(added, configMapYAML("team-a", "new", "1"))}, []int{1}},
		{"a delete parses nothing", []manifest.Op{manifest.Delete{ID: first}}, []int{0}},
		{"unchanged bytes parse nothing", []manifest.Op{upsert(second, secondBody)}, []int{0}},
		{"rendered, a new object and its next change parse nothing",
			[]manifest.Op{rendered(t, added, configMapYAML("team-a", "new", "1")),
				rendered(t, added, configMapYAML("team-a", "new", "2"))}, []int{0, 0}},
		{"rendered, unchanged bytes mark the document as the operator's: its change parses nothing",
			[]manifest.Op{rendered(t, second, secondBody), rendered(t, second, configMapYAML("team-a", "second", "changed"))}, []int{0, 0}},
		{"rendered, a document not yet known as the operator's: the old once and the desired for the editor, then nothing",
			[]manifest.Op{rendered(t, second, configMapYAML("team-a", "second", "changed")),
				rendered(t, second, configMapYAML("team-a", "second", "again"))}, []int{2, 0}},
		{"rendered, a commented document: the old once, the desired for the editor and the edited text each time",
			[]manifest.Op{rendered(t, first, configMapYAML("team-a", "first", "changed")),
				rendered(t, first, configMapYAML("team-a", "first", "again"))}, []int{3, 2}},
		{"rendered without its tree (a replay's, or restored from a journal): an operator-written document parses nothing",
			[]manifest.Op{manifest.Upsert{ID: second, YAML: []byte(secondBody), Rendered: true},
				manifest.Upsert{ID: second, YAML: []byte(configMapYAML("team-a", "second", "changed")), Rendered: true}}, []int{0, 0}},
		{"rendered without its tree: a new object and its next change parse nothing",
			[]manifest.Op{manifest.Upsert{ID: added, YAML: []byte(configMapYAML("team-a", "new", "1")), Rendered: true},
				manifest.Upsert{ID: added, YAML: []byte(configMapYAML("team-a", "new", "2")), Rendered: true}}, []int{0, 0}},
		{"rendered without its tree, a commented document: the old, the desired for the editor and the edited text",
			[]manifest.Op{manifest.Upsert{ID: first, YAML: []byte(configMapYAML("team-a", "first", "changed")), Rendered: true}}, []int{3}},
		{"rendered, the same object as a commented document: the old once, then nothing",
			[]manifest.Op{rendered(t, first, configMapYAML("team-a", "first", "one")),
				rendered(t, first, configMapYAML("team-a", "first", "one"))}, []int{1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := bundleIndex(t)
			for i, op := range tt.ops {
				before := manifest.IndexParses(ix)
				result, err := manifest.Plan(ix, []manifest.Op{op})
				require.NoError(t, err)
				require.Empty(t, result.Refusals)
				require.Equal(t, tt.planParses[i], manifest.PlanParses(result), "parses in Plan %d", i+1)
				require.NoError(t, ix.Apply(result))
				require.Equal(t, before, manifest.IndexParses(ix), "parses in Apply %d", i+1)
			}
		})
	}
}

// TestARenderedWriteWritesWhatAnUnrenderedOneWrites: the tree changes how
// much is parsed, never what is written. Each sequence of writes is planned
// twice on the same files, with and without trees, and every commit's
// files must be equal: hand-kept and operator-written documents, new ones,
// and the kustomization cases (overrides edited through, namespaces left
// out, a new file beside the kustomization).
func TestARenderedWriteWritesWhatAnUnrenderedOneWrites(t *testing.T) {
	first, second, added := configMapID("team-a", "first"), configMapID("team-a", "second"), configMapID("team-a", "new")
	web, shopWeb, beside := deploymentID("team-a", "web"), deploymentID("shop", "web"), configMapID("team-a", "beside")
	type write struct {
		id   manifest.ObjectID
		text string
	}
	bundle := func() (string, map[string]string) {
		return "apps", withReadme("apps", map[string]string{bundlePath: bundle})
	}
	overrides := func() (string, map[string]string) {
		return ".", withReadme(".", map[string]string{"kustomization.yaml": overrideKustomization, "deploy.yaml": overriddenDeployment})
	}
	tests := []struct {
		name   string
		files  func() (string, map[string]string)
		writes []write
	}{
		{"a commented document", bundle, []write{{first, configMapYAML("team-a", "first", "changed")},
			{first, configMapYAML("team-a", "first", "again")}, {first, configMapYAML("team-a", "first", "again")}}},
		{"an operator-written document", bundle, []write{{second, secondBody},
			{second, configMapYAML("team-a", "second", "changed")}, {second, configMapYAML("team-a", "second", `"quoted: yes"`)}}},
		{"a new object changed twice", bundle, []write{{added, configMapYAML("team-a", "new", "1")},
			{added, configMapYAML("team-a", "new", "2")}, {added, configMapYAML("team-a", "new", `"3"`)}}},
		{"the same as a commented text", bundle, []write{{first, configMapYAML("team-a", "first", "one")},
			{first, configMapYAML("team-a", "first", "two")}}},
		{"a deployment under a marker", bundle, []write{{deploymentID("team-a", "third"), deploymentYAML("team-a", "third", 5)},
			{deploymentID("team-a", "third"), deploymentYAML("team-a", "third", 6)}}},
		{"overrides edited through", overrides, []write{{shopWeb, live(5, "nginx:1.27", "")},
			{shopWeb, live(5, "nginx:1.28", "web")}, {shopWeb, live(3, "mirror.example.com/nginx:1.28", "")}}},
		{"a namespace the kustomization sets", func() (string, map[string]string) { return "apps", teamFolder() },
			[]write{{web, deploymentYAML("team-a", "web", 3)}, {web, deploymentYAML("team-a", "web", 4)},
				{beside, configMapYAML("team-a", "beside", "1")}, {beside, configMapYAML("team-a", "beside", "2")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, files := tt.files()
			plain, withTree := newIndex(t, root, files), newIndex(t, root, files)
			for i, w := range tt.writes {
				want := plan(t, plain, upsert(w.id, w.text))
				got := plan(t, withTree, rendered(t, w.id, w.text))
				require.Equal(t, contents(want), contents(got), "commit %d", i+1)
				require.Equal(t, want.Objects, got.Objects, "commit %d", i+1)
				require.NoError(t, plain.Apply(want))
				require.NoError(t, withTree.Apply(got))
			}
		})
	}
}
