package manifest

import "hash/maphash"

// identityIndex finds documents by identity. An identity with one
// document, nearly all of them, is kept by a seeded 64-bit hash of it,
// and a lookup checks the document found; one with several documents (a
// duplicate Check refuses), or whose hash another identity holds, is kept
// by whole key. By whole key, with a list of locations each, this index
// took about 130 bytes an object of a mirrored subtree; by hash it takes
// about 40 (BenchmarkReplayPeakLiveHeap in internal/branch).
//
// Its methods read the documents the locations point at in files, the
// index's manifests, which must hold every location the index keeps.
type identityIndex struct {
	one  map[uint64]location
	more map[identityKey][]location
}

// identitySeed seeds the hashes of one process: an index is rebuilt, not
// stored.
var identitySeed = maphash.MakeSeed()

func newIdentityIndex() identityIndex {
	return identityIndex{one: map[uint64]location{}, more: map[identityKey][]location{}}
}

func keyAt(files map[string]*manifestFile, loc location) identityKey {
	return files[loc.path].docs[loc.section].id.key()
}

// locations are the documents of key.
func (x identityIndex) locations(files map[string]*manifestFile, key identityKey) []location {
	if locs, ok := x.more[key]; ok {
		return locs
	}
	if loc, ok := x.one[maphash.Comparable(identitySeed, key)]; ok && keyAt(files, loc) == key {
		return []location{loc}
	}
	return nil
}

// add records loc as a document of key; files holds the documents already
// recorded.
func (x identityIndex) add(files map[string]*manifestFile, key identityKey, loc location) {
	if locs, ok := x.more[key]; ok {
		x.more[key] = append(locs, loc)
		return
	}
	h := maphash.Comparable(identitySeed, key)
	first, taken := x.one[h]
	switch {
	case !taken:
		x.one[h] = loc
	case keyAt(files, first) == key: // a second document of one object
		delete(x.one, h)
		x.more[key] = []location{first, loc}
	default: // another identity holds the hash
		x.more[key] = []location{loc}
	}
}

// remove forgets the documents of key at path; files still holds them.
func (x identityIndex) remove(files map[string]*manifestFile, key identityKey, path string) {
	if locs, ok := x.more[key]; ok {
		kept := locs[:0]
		for _, loc := range locs {
			if loc.path != path {
				kept = append(kept, loc)
			}
		}
		if len(kept) == 0 {
			delete(x.more, key)
		} else {
			x.more[key] = kept
		}
		return
	}
	h := maphash.Comparable(identitySeed, key)
	if loc, ok := x.one[h]; ok && loc.path == path && keyAt(files, loc) == key {
		delete(x.one, h)
	}
}

// all calls each with every identity and its first document, in no
// order.
func (x identityIndex) all(files map[string]*manifestFile, each func(identityKey, location)) {
	for _, loc := range x.one {
		each(keyAt(files, loc), loc)
	}
	for key, locs := range x.more {
		if len(locs) > 0 {
			each(key, locs[0])
		}
	}
}

// duplicates calls each with every identity of several documents.
func (x identityIndex) duplicates(each func(identityKey, []location)) {
	for key, locs := range x.more {
		if len(locs) > 1 {
			each(key, locs)
		}
	}
}
