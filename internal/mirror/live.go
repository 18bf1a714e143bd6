package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// object, so a re-creation with the same content is written again. The
// digests are kept as their 32 bytes, not as the 64-character hex string:
// this is per-object state of every mirrored object.
type emittedContent struct {
	mu      sync.Mutex
	digests map[watch.ObjectKey]digest
}

type digest [sha256.Size]byte

// parseDigest is the bytes of a hex ContentDigest; false for anything else.
func parseDigest(d string) (digest, bool) {
	var out digest
	if len(d) != hex.EncodedLen(len(out)) {
		return out, false
	}
	_, err := hex.Decode(out[:], []byte(d))
	return out, err == nil
}

func (e *emittedContent) holds(key watch.ObjectKey, d string) bool {
	want, ok := parseDigest(d)
	if !ok {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	last, ok := e.digests[key]
	return ok && last == want
}

func (e *emittedContent) remember(key watch.ObjectKey, d string) {
	parsed, ok := parseDigest(d)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !ok {
		delete(e.digests, key)
		return
	}
	if e.digests == nil {
		e.digests = map[watch.ObjectKey]digest{}
	}
	e.digests[key] = parsed
}

func (e *emittedContent) forget(key watch.ObjectKey) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.digests, key)
}

func (e *emittedContent) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.digests = nil
}
