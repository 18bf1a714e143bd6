package keyhash

import (
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/require"
)

type entry struct{ key, value string }

func keyOf(e entry) string { return e.key }

// TestAMapTellsApartKeysOfOneHash: a lookup checks the value its hash
// finds; a key whose hash another holds is found by the whole key, set
// again and deleted without touching the other.
func TestAMapTellsApartKeysOfOneHash(t *testing.T) {
	m := New[string, entry](2)
	m.Set("a", entry{"a", "1"}, keyOf)
	// b's hash as if it were a's: the two collide.
	m.byHash[maphash.Comparable(seed, "b")] = entry{"a", "1"}
	_, found := m.Get("b", keyOf)
	require.False(t, found, "a's value is not b's")

	m.Set("b", entry{"b", "2"}, keyOf)
	m.Set("b", entry{"b", "3"}, keyOf)
	a, found := m.Get("a", keyOf)
	require.True(t, found)
	require.Equal(t, "1", a.value)
	b, found := m.Get("b", keyOf)
	require.True(t, found)
	require.Equal(t, "3", b.value)
	require.Len(t, m.clashes, 1)

	m.Delete("b", keyOf)
	_, found = m.Get("b", keyOf)
	require.False(t, found)
	a, found = m.Get("a", keyOf)
	require.True(t, found, "deleting b leaves a")
	require.Equal(t, "1", a.value)
}

// TestAMapSetsGetsAndDeletes: the common case, one key a hash.
func TestAMapSetsGetsAndDeletes(t *testing.T) {
	m := New[string, entry](0)
	m.Set("a", entry{"a", "1"}, keyOf)
	m.Set("b", entry{"b", "2"}, keyOf)
	m.Set("a", entry{"a", "3"}, keyOf)
	var all []string
	m.All(func(e entry) { all = append(all, e.key+"="+e.value) })
	require.ElementsMatch(t, []string{"a=3", "b=2"}, all)
	m.Delete("a", keyOf)
	m.Delete("missing", keyOf)
	_, found := m.Get("a", keyOf)
	require.False(t, found)
	b, found := m.Get("b", keyOf)
	require.True(t, found)
	require.Equal(t, "2", b.value)
}
