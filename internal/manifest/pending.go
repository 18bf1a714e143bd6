package manifest

import (
	"fmt"
	"maps"
	"slices"

	"github.com/configbutler/gitops-reverser/gitfile"
)

// This file holds the index's pending files: YAML files known by path and
// blob id only, neither read nor parsed. After a restart nearly every
// mirrored file is the rendering of an object the replay is about to
// write, but the index loads when the first window closes, before the
// replay's later windows arrive: their files wait here until a window
// confirms them by blob id (no read, no parse) or a plan needs the whole
// subtree and resolves them (read and parsed as any file is).

// pendingFiles are the index's pending files, by path and by blob id.
type pendingFiles struct {
	byPath map[string]string
	byBlob map[string][]string
}

// Deferrable reports whether the file at p, under the subtree root, may
// be held pending (Defer): a manifest file. A kustomization, a dotfile or a
// README is read whatever happens: the index reads kustomizations to place
// and to build namespaces, and keeps auxiliary files' content.
func Deferrable(root, p string) bool {
	cleanRoot, err := cleanRootPath(root)
	if err != nil {
		return false
	}
	rel, err := (&Index{root: cleanRoot}).relative(p)
	return err == nil && classify(rel) == classManifest
}

// Defer records the file at p as pending: present (Has) with content
// unknown, so no object is found in it and no new object is placed at it.
// It replaces what the index knew of p.
func (ix *Index) Defer(p, blobID string) error {
	rel, err := ix.relative(p)
	if err != nil {
		return err
	}
	if classify(rel) != classManifest {
		return fmt.Errorf("index file %q: only a manifest file may be pending", p)
	}
	ix.remove(p, nil)
	if ix.pending.byPath == nil {
		ix.pending = pendingFiles{byPath: map[string]string{}, byBlob: map[string][]string{}}
	}
	ix.pending.byPath[p] = blobID
	ix.pending.byBlob[blobID] = append(ix.pending.byBlob[blobID], p)
	return nil
}

// PendingCount is the number of pending files.
func (ix *Index) PendingCount() int { return len(ix.pending.byPath) }

// Pending lists the pending files, blob id by path, for a caller about to
// read them (Resolve). The map is the caller's.
func (ix *Index) Pending() map[string]string {
	out := make(map[string]string, len(ix.pending.byPath))
	for p, id := range ix.pending.byPath {
		out[p] = id
	}
	return out
}

// Confirm takes the one pending file whose blob id is blobID as content,
// which the caller knows has that blob id and is exactly the operator's
// rendering of the object id (manifest.FileContent of a write's YAML): it
// becomes that object's canonical document without a parse, as
// NewIndexRendered indexes such a file. It returns the path, or false when
// no pending file has that blob id, when several have (which one holds the
// object is then for a parse to say: Resolve), or when the text is not a
// plain single document. The index keeps content; it must not change.
func (ix *Index) Confirm(blobID string, content []byte, id ObjectID) (string, bool) {
	paths := ix.pending.byBlob[blobID]
	if len(paths) != 1 {
		return "", false
	}
	parsed := renderedFile(content, id)
	if parsed == nil {
		return "", false
	}
	p := paths[0]
	if err := ix.add(p, content, parsed); err != nil {
		return "", false // a pending path is clean and under the root: unreachable
	}
	return p, true
}

// Resolve indexes pending files with their content, by path, parsing them
// as Add does. A path that is not pending is refused: its content is
// already known, and a caller resolving it read the wrong list.
func (ix *Index) Resolve(files map[string][]byte) error {
	for p := range files {
		if _, ok := ix.pending.byPath[p]; !ok {
			return fmt.Errorf("resolving %q: not a pending file", p)
		}
	}
	// In path order, as NewIndex adds files: which of two files holding
	// one object Lookup names first must not depend on a map's order.
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if err := ix.add(p, files[p], nil); err != nil {
			return err
		}
	}
	return nil
}

// isPending reports whether p is a pending file.
func (ix *Index) isPending(p string) bool {
	_, ok := ix.pending.byPath[p]
	return ok
}

// forgetPending drops p from the pending files, if it is one.
func (ix *Index) forgetPending(p string) {
	id, ok := ix.pending.byPath[p]
	if !ok {
		return
	}
	delete(ix.pending.byPath, p)
	kept := ix.pending.byBlob[id][:0]
	for _, other := range ix.pending.byBlob[id] {
		if other != p {
			kept = append(kept, other)
		}
	}
	if len(kept) == 0 {
		delete(ix.pending.byBlob, id)
	} else {
		ix.pending.byBlob[id] = kept
	}
}

// checkUnread refuses a plan that changes a pending file: its content is
// unknown, so writing there (a new object placed at its path) would drop
// whatever it holds. A caller resolves the pending files before it plans
// anything but no-ops; this is the guard that a wrong plan never goes out.
func (ix *Index) checkUnread(changes []gitfile.Change) error {
	for _, c := range changes {
		if ix.isPending(c.Path) {
			return fmt.Errorf("planning a change to %s, a file not read yet: resolve the pending files first", c.Path)
		}
	}
	return nil
}
