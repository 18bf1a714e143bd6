// Package keyhash maps keys to values by a seeded 64-bit hash of the key
// rather than the key itself: for maps of tens of thousands of entries
// whose keys are several strings (an object's identity), a hash is 8 bytes
// where the key is 64. Each value names the key it was set for, which the
// caller reads (keyOf), so a lookup checks the value its hash finds; a key
// whose hash another key holds is kept whole beside the rest.
package keyhash

import "hash/maphash"

// Map is a map from K to V by hash. Its zero value is not usable: New.
type Map[K comparable, V any] struct {
	byHash  map[uint64]V
	clashes map[K]V
}

// seed seeds the hashes of one process: a Map is rebuilt, not stored.
var seed = maphash.MakeSeed()

// New is an empty Map with room for size entries.
func New[K comparable, V any](size int) Map[K, V] {
	return Map[K, V]{byHash: make(map[uint64]V, size)}
}

// Get is the value set for key; keyOf is the key a value was set for.
func (m Map[K, V]) Get(key K, keyOf func(V) K) (V, bool) {
	if v, ok := m.byHash[maphash.Comparable(seed, key)]; ok && keyOf(v) == key {
		return v, true
	}
	v, ok := m.clashes[key]
	return v, ok
}

// Set sets the value of key.
func (m *Map[K, V]) Set(key K, v V, keyOf func(V) K) {
	h := maphash.Comparable(seed, key)
	if held, taken := m.byHash[h]; taken && keyOf(held) != key {
		if m.clashes == nil {
			m.clashes = map[K]V{}
		}
		m.clashes[key] = v
		return
	}
	m.byHash[h] = v
	delete(m.clashes, key)
}

// Delete forgets key; a key without a value is ignored.
func (m Map[K, V]) Delete(key K, keyOf func(V) K) {
	h := maphash.Comparable(seed, key)
	if held, ok := m.byHash[h]; ok && keyOf(held) == key {
		delete(m.byHash, h)
		return
	}
	delete(m.clashes, key)
}

// All calls each with every value, in no order.
func (m Map[K, V]) All(each func(V)) {
	for _, v := range m.byHash {
		each(v)
	}
	for _, v := range m.clashes {
		each(v)
	}
}
