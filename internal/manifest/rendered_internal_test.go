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
