package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash/maphash"
	"sync"

	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/sanitize"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// liveWrite is an event made ready for the branch worker: the write, who
// made it, and the digest of what it writes ("" for a delete).
type liveWrite struct {
	kind   string // "upsert" or "delete", for Forwarded
	author branch.Author
	write  branch.Write
	digest string
}

// prepare makes a live change ready for the worker, with the tool that
// made it (attribution.ChangedWith; none for a delete: an object's last
// managedFields name its last writer, not its deleter); the stream runs it on
// the object's lane (watch.Stream.Prepare), so waiting for the author holds
// back only the object's own later events. A change that renders exactly
// what the stream last wrote of the object (a status write, a touch of
// dropped metadata) is dropped before it waits: Git already holds it, and
// a status write never gets an audit fact, so it would wait the whole
// grace for nothing.
func (g *streamGlue) prepare(ctx context.Context, ev watch.Event) any {
	ctx = g.seenCtx(ctx, ev)
	switch ev.Kind {
	case watch.Upsert:
		id, content, node, ok := g.render(ev)
		if !ok {
			return nil
		}
		digest := sanitize.ContentDigest(content)
		if g.emitted.holds(keyOf(ev), digest) {
			return nil
		}
		return &liveWrite{kind: "upsert", author: g.target.attribution.authorOf(ctx, g.claim, ev, digest),
			write: branch.Write{ID: id, YAML: content, Node: node, Sensitive: g.claim.Sensitive, Received: ev.Received, CatchUp: ev.CatchUp,
				ChangedWith: attribution.ChangedWith(ev.Object.GetManagedFields())},
			digest: digest}
	case watch.Delete:
		if !g.follows(ev.Type) {
			return nil
		}
		return &liveWrite{kind: "delete", author: g.target.attribution.authorOf(ctx, g.claim, ev, ""),
			write: branch.Write{ID: g.objectID(ev.Object), Sensitive: g.claim.Sensitive, Received: ev.Received, CatchUp: ev.CatchUp}}
	}
	return nil
}

// emit hands a prepared write to the worker and remembers what the stream
// wrote of the object; nothing for a change prepare dropped.
func (g *streamGlue) emit(ctx context.Context, prepared any) error {
	w, _ := prepared.(*liveWrite)
	if w == nil {
		return nil
	}
	g.target.observer.Forwarded(g.target.Key, w.kind, w.write.ID)
	if err := g.target.sink.Write(ctx, g.target.Key, w.author, w.write); err != nil {
		return err // the stream names the scope when it reports this
	}
	key := watch.ObjectKey{Namespace: w.write.ID.Namespace, Name: w.write.ID.Name}
	if w.write.YAML == nil {
		g.emitted.forget(key)
	} else {
		g.emitted.remember(key, w.digest)
	}
	return nil
}

func keyOf(ev watch.Event) watch.ObjectKey {
	return watch.ObjectKey{Namespace: ev.Object.GetNamespace(), Name: ev.Object.GetName()}
}

// emittedContent is what a stream last wrote of each object, by its
// sanitize.ContentDigest: the digest an admission review's fact carries.
// Lanes of different objects use it at once. A replay starts it afresh
// (its sweep may remove what it remembers), and a delete forgets the
// object, so a re-creation with the same content is written again.
//
// It is per-object state of every mirrored object, so it keeps neither
// the object's name nor the whole digest: an entry is a 64-bit hash of
// (namespace, name) and the first 128 bits of the SHA-256, 24 bytes a
// slot. The map of ObjectKey to the 32-byte digest it replaces measured
// 94 B an object (50k ConfigMaps, BenchmarkReplayStateBytesPerObject) and
// kept each object's name and namespace strings alive besides; this
// measures 35 B and keeps no string.
//
// Why a shortened entry loses no change. The only harm is holds answering
// true for a write that changes Git: the write is dropped. holds answers
// true only when the slot of the object's key hash holds the first 128
// bits of the new rendering's digest.
//   - Two objects whose keys hash alike share a slot. The slot then holds
//     the digest of one object's rendering, and a rendering names its
//     object (metadata.name and namespace; a stream's objects share group
//     and kind), so the other object's rendering is different content: its
//     digest matches only by a 128-bit collision (below). A key collision
//     alone costs a write that changes nothing (Git already holds it), or,
//     when one of the two is deleted (forget), the other's next unchanged
//     event is written once more. Either is a no-op commit at worst; the
//     planner finds the file unchanged. Its chance is about n²/2⁶⁵: 7e-11
//     for 50k objects of one stream.
//   - Two different renderings of one object whose digests agree in their
//     first 128 bits. By chance that is 2⁻¹²⁸ a comparison: a stream of
//     50k objects each changing every second for ten years compares about
//     1.6e13 times, a chance of 5e-26. By design it takes a SHA-256
//     collision on 128 bits: a birthday search of about 2⁶⁴ hashes, out of
//     reach of someone who can write objects and wants a change kept out
//     of Git. Sixty-four bits would not do: a 2³² search is an afternoon.
//
// The key hash is seeded per map (maphash), so nobody outside can aim at
// a key collision either.
type emittedContent struct {
	mu      sync.Mutex
	seed    maphash.Seed
	digests map[uint64]emittedDigest
	// keyHash replaces the seeded hash in a test that makes keys collide.
	keyHash func(watch.ObjectKey) uint64
}

// emittedDigest is the first half of a SHA-256 content digest.
type emittedDigest [sha256.Size / 2]byte

// parseDigest is the first half of a hex ContentDigest's bytes; false for
// anything that is not a ContentDigest.
func parseDigest(d string) (emittedDigest, bool) {
	var full [sha256.Size]byte
	var out emittedDigest
	if len(d) != hex.EncodedLen(len(full)) {
		return out, false
	}
	if _, err := hex.Decode(full[:], []byte(d)); err != nil {
		return out, false
	}
	copy(out[:], full[:])
	return out, true
}

// slot is key's place in the map; the caller holds mu.
func (e *emittedContent) slot(key watch.ObjectKey) uint64 {
	if e.digests == nil {
		e.seed = maphash.MakeSeed()
		e.digests = map[uint64]emittedDigest{}
	}
	if e.keyHash != nil {
		return e.keyHash(key)
	}
	return maphash.Comparable(e.seed, key)
}

func (e *emittedContent) holds(key watch.ObjectKey, d string) bool {
	want, ok := parseDigest(d)
	if !ok {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	last, ok := e.digests[e.slot(key)]
	return ok && last == want
}

func (e *emittedContent) remember(key watch.ObjectKey, d string) {
	parsed, ok := parseDigest(d)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !ok {
		delete(e.digests, e.slot(key))
		return
	}
	e.digests[e.slot(key)] = parsed
}

func (e *emittedContent) forget(key watch.ObjectKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.digests, e.slot(key))
}

func (e *emittedContent) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.digests = nil
}
