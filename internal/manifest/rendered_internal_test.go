package manifest

import (
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

// TestTheIndexKeepsABoundedNumberOfParses: past maxCachedTrees the oldest
// kept parse is dropped, and a document kept again takes no second place.
func TestTheIndexKeepsABoundedNumberOfParses(t *testing.T) {
	var ring treeRing
	docs := make([]*document, maxCachedTrees+1)
	for i := range docs {
		docs[i] = &document{}
		ring.keep(docs[i], &yaml.Node{})
		ring.keep(docs[i], &yaml.Node{})
	}
	require.Nil(t, docs[0].tree, "the oldest parse is dropped")
	for _, doc := range docs[1:] {
		require.NotNil(t, doc.tree)
	}
	require.Len(t, ring.docs, maxCachedTrees)
}

// TestARenderingIsTakenWithoutAParseUnlessItHasASopsField: a new object's
// rendering is indexed as its object, plaintext, with nothing parsed; one
// with a top-level sops mapping is parsed and known as encrypted, as a
// load would know it (renderedFile).
func TestARenderingIsTakenWithoutAParseUnlessItHasASopsField(t *testing.T) {
	id := ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team-a", Name: "app"}
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-a\ndata:\n  v: x\n"
	for _, tt := range []struct {
		name      string
		yaml      string
		parses    int
		encrypted bool
	}{
		{"plain", text, 0, false},
		{"with a sops field", text + "sops:\n  version: 3.9.0\n", 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := NewIndex(".", nil)
			require.NoError(t, err)
			result, err := Plan(ix, []Op{Upsert{ID: id, YAML: []byte(tt.yaml), Rendered: true}})
			require.NoError(t, err)
			require.Empty(t, result.Refusals)
			require.Equal(t, tt.parses, result.parses)
			require.NoError(t, ix.Apply(result))
			locs := ix.byID.locations(ix.manifests, id.key())
			require.Len(t, locs, 1)
			doc := ix.manifests[locs[0].path].docs[0]
			require.Equal(t, tt.encrypted, doc.encrypted)
			require.Empty(t, doc.id.Resource, "a file does not say the resource")
		})
	}
}
