package manifest

import "github.com/configbutler/gitops-reverser/internal/keyhash"

// identityIndex finds documents by identity. An identity with one
// document, nearly all of them, is kept by hash (keyhash), checked against
// the document found; one with several documents, a duplicate Check
// refuses, by whole key with their list. By whole key, with a list of
// locations each, this index took about 130 bytes an object of a mirrored
// subtree; by hash it takes about 40 (BenchmarkReplayPeakLiveHeap in
// internal/branch).
//
// Its methods read the documents the locations point at in files, the
// index's manifests, which must hold every location the index keeps.
type identityIndex struct {
	one  keyhash.Map[identityKey, location]
	more map[identityKey][]location
}

func newIdentityIndex() identityIndex {
	return identityIndex{one: keyhash.New[identityKey, location](0), more: map[identityKey][]location{}}
}

// keysIn names the identity of the document at a location in files.
func keysIn(files map[string]*manifestFile) func(location) identityKey {
	return func(loc location) identityKey { return files[loc.path].docs[loc.section].id.key() }
}

// locations are the documents of key.
func (x identityIndex) locations(files map[string]*manifestFile, key identityKey) []location {
	if locs, ok := x.more[key]; ok {
		return locs
	}
	if loc, ok := x.one.Get(key, keysIn(files)); ok {
		return []location{loc}
	}
	return nil
}

// add records loc as a document of key; files holds the documents already
// recorded.
func (x *identityIndex) add(files map[string]*manifestFile, key identityKey, loc location) {
	if locs, ok := x.more[key]; ok {
		x.more[key] = append(locs, loc)
		return
	}
	keyOf := keysIn(files)
	if first, ok := x.one.Get(key, keyOf); ok { // a second document of one object
		x.one.Delete(key, keyOf)
		x.more[key] = []location{first, loc}
		return
	}
	x.one.Set(key, loc, keyOf)
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
	keyOf := keysIn(files)
	if loc, ok := x.one.Get(key, keyOf); ok && loc.path == path {
		x.one.Delete(key, keyOf)
	}
}

// all calls each with every identity and its first document, in no
// order.
func (x identityIndex) all(files map[string]*manifestFile, each func(identityKey, location)) {
	key := keysIn(files)
	x.one.All(func(loc location) { each(key(loc), loc) })
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
