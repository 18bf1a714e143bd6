package branch

import "hash/maphash"

// writeIndex finds a window's write of an object: a seeded 64-bit hash of
// the object's identity (writeKey) maps to the write's place in the
// window, and a lookup checks that the write found names the object. Two
// identities with one hash (about one pair in 10^10 in a 50,000-object
// window) are told apart by the second map, by whole key. A map by whole
// key took about 100 bytes an object of a replay's window; this takes
// about 20 (BenchmarkReplayWindowsBytesPerObject).
type writeIndex struct {
	byHash  map[uint64]int32
	clashes map[writeKey]int
}

// writeKeySeed seeds the hashes of one process; an index is rebuilt from
// its writes when a window is restored (window.UnmarshalJSON).
var writeKeySeed = maphash.MakeSeed()

func newWriteIndex(size int) writeIndex {
	return writeIndex{byHash: make(map[uint64]int32, size)}
}

// find is the place in writes of the write of key.
func (x writeIndex) find(writes []Write, key writeKey) (int, bool) {
	if i, ok := x.byHash[maphash.Comparable(writeKeySeed, key)]; ok && keyOf(writes[i].ID) == key {
		return int(i), true
	}
	i, ok := x.clashes[key]
	return i, ok
}

// set records that writes[i] is the write of its object.
func (x *writeIndex) set(writes []Write, i int) {
	key := keyOf(writes[i].ID)
	h := maphash.Comparable(writeKeySeed, key)
	if at, taken := x.byHash[h]; taken && keyOf(writes[at].ID) != key {
		if x.clashes == nil {
			x.clashes = map[writeKey]int{}
		}
		x.clashes[key] = i
		return
	}
	x.byHash[h] = int32(i) //nolint:gosec // a window holds far fewer than 2^31 writes
}
