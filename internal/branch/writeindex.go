package branch

import "github.com/configbutler/gitops-reverser/internal/keyhash"

// writeIndex finds a window's write of an object: its identity (writeKey)
// by hash to the write's place in the window (keyhash). A map by whole key
// took about 100 bytes an object of a replay's window; this takes about 20
// (BenchmarkReplayWindowsBytesPerObject).
type writeIndex struct {
	places keyhash.Map[writeKey, int32]
}

func newWriteIndex(size int) writeIndex {
	return writeIndex{places: keyhash.New[writeKey, int32](size)}
}

// keyAt names the key of a place in writes.
func keyAt(writes []Write) func(int32) writeKey {
	return func(i int32) writeKey { return keyOf(writes[i].ID) }
}

// find is the place in writes of the write of key.
func (x writeIndex) find(writes []Write, key writeKey) (int, bool) {
	i, ok := x.places.Get(key, keyAt(writes))
	return int(i), ok
}

// set records that writes[i] is the write of its object.
func (x *writeIndex) set(writes []Write, i int) {
	x.places.Set(keyOf(writes[i].ID), int32(i), keyAt(writes)) //nolint:gosec // a window holds far fewer than 2^31 writes
}
