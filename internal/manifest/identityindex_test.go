package manifest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnIdentityIndexKeepsDuplicatesByWholeKey: an identity is found by
// hash (keyhash, which tells apart two identities of one hash), one of two
// documents by whole key, and removing them leaves the rest as it was.
func TestAnIdentityIndexKeepsDuplicatesByWholeKey(t *testing.T) {
	a := ObjectID{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "a"}
	b := ObjectID{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "b"}
	files := map[string]*manifestFile{
		"a.yaml":  {docs: []*document{{id: a}}},
		"b.yaml":  {docs: []*document{{id: b}}},
		"a2.yaml": {docs: []*document{{id: a}}},
	}
	x := newIdentityIndex()
	x.add(files, a.key(), location{path: "a.yaml"})
	require.Empty(t, x.locations(files, b.key()), "a's document is not b's")
	x.add(files, b.key(), location{path: "b.yaml"})
	require.Equal(t, []location{{path: "a.yaml"}}, x.locations(files, a.key()))
	require.Equal(t, []location{{path: "b.yaml"}}, x.locations(files, b.key()))

	x.add(files, a.key(), location{path: "a2.yaml"})
	require.ElementsMatch(t, []location{{path: "a.yaml"}, {path: "a2.yaml"}}, x.locations(files, a.key()))
	var duplicates []identityKey
	x.duplicates(func(key identityKey, _ []location) { duplicates = append(duplicates, key) })
	require.Equal(t, []identityKey{a.key()}, duplicates)

	x.remove(files, a.key(), "a.yaml")
	require.Equal(t, []location{{path: "a2.yaml"}}, x.locations(files, a.key()))
	x.remove(files, b.key(), "b.yaml")
	require.Empty(t, x.locations(files, b.key()))
	seen := map[identityKey]location{}
	x.all(files, func(key identityKey, first location) { seen[key] = first })
	require.Equal(t, map[identityKey]location{a.key(): {path: "a2.yaml"}}, seen)
}
