// Package gitobjects is a repository's objects in memory, real Git objects
// so every id is the one Git computes. The forge simulators (test/sim/github,
// test/sim/gitlab) keep their repositories here and add only what their API
// says about paths, refs and errors; a test can hand any object the store
// wrote to git itself and get the same id back.
package gitobjects

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Store holds one repository's objects in go-git's memory storage. It is
// not safe for concurrent use: the simulators serialise requests already.
type Store struct {
	objects *memory.Storage
}

// NewStore returns an empty object store.
func NewStore() *Store {
	return &Store{objects: memory.NewStorage()}
}

// Entry is a non-tree entry of a flattened tree: a blob, a symlink or a
// submodule, with its mode.
type Entry struct {
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// Files is a flattened tree: path (slash-separated, no leading slash) →
// entry. It is how the simulators edit trees, since both APIs speak in
// paths, not in nested tree objects.
type Files map[string]Entry

// WriteBlob stores content as a blob and returns its id.
func (s *Store) WriteBlob(content []byte) (plumbing.Hash, error) {
	obj := s.objects.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing blob: %w", err)
	}
	if _, err := w.Write(content); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing blob: %w", err)
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing blob: %w", err)
	}
	return s.set(obj, "blob")
}

// Blob returns the content of blob h.
func (s *Store) Blob(h plumbing.Hash) ([]byte, error) {
	return s.Raw(plumbing.BlobObject, h)
}

// Raw returns object h of type t exactly as stored (what `git cat-file <t>
// <h>` prints), so a test can hash it with git itself.
func (s *Store) Raw(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	obj, err := s.objects.EncodedObject(t, h)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", t, h, err)
	}
	reader, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", t, h, err)
	}
	defer reader.Close()
	content, err := io.ReadAll(reader)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", t, h, err)
	}
	return content, nil
}

// Has reports whether the store holds object h of type t.
func (s *Store) Has(t plumbing.ObjectType, h plumbing.Hash) bool {
	_, err := s.objects.EncodedObject(t, h)
	return err == nil
}

// Size is the size in bytes of object h of type t; ok is false when the
// store does not hold it.
func (s *Store) Size(t plumbing.ObjectType, h plumbing.Hash) (size int64, ok bool) {
	obj, err := s.objects.EncodedObject(t, h)
	if err != nil {
		return 0, false
	}
	return obj.Size(), true
}

// WriteTree stores a tree object with entries in Git's canonical order: by
// name, a subtree compared as if its name ended in "/". Git rejects trees
// in any other order (fsck), and the tree id depends on it. entries is
// sorted in place.
func (s *Store) WriteTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	obj := s.objects.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encoding tree: %w", err)
	}
	return s.set(obj, "tree")
}

// WriteFiles stores the nested trees of a flattened tree and returns the
// root tree's id. No files give the empty tree.
func (s *Store) WriteFiles(files Files) (plumbing.Hash, error) {
	var direct []object.TreeEntry
	subdirs := map[string]Files{}
	for path, entry := range files {
		dir, rest, nested := strings.Cut(path, "/")
		if !nested {
			direct = append(direct, object.TreeEntry{Name: path, Mode: entry.Mode, Hash: entry.Hash})
			continue
		}
		if subdirs[dir] == nil {
			subdirs[dir] = Files{}
		}
		subdirs[dir][rest] = entry
	}
	for dir, sub := range subdirs {
		h, err := s.WriteFiles(sub)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("writing tree %s: %w", dir, err)
		}
		direct = append(direct, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h})
	}
	return s.WriteTree(direct)
}

// Tree returns tree h.
func (s *Store) Tree(h plumbing.Hash) (*object.Tree, error) {
	t, err := object.GetTree(s.objects, h)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", h, err)
	}
	return t, nil
}

// Flatten adds every non-tree entry below tree to out, paths joined onto
// prefix ("" for the root).
func (s *Store) Flatten(tree plumbing.Hash, prefix string, out Files) error {
	t, err := s.Tree(tree)
	if err != nil {
		return err
	}
	for _, entry := range t.Entries {
		full := entry.Name
		if prefix != "" {
			full = prefix + "/" + entry.Name
		}
		if entry.Mode == filemode.Dir {
			if err := s.Flatten(entry.Hash, full, out); err != nil {
				return err
			}
			continue
		}
		out[full] = Entry{Mode: entry.Mode, Hash: entry.Hash}
	}
	return nil
}

// FilesOf flattens tree from its root.
func (s *Store) FilesOf(tree plumbing.Hash) (Files, error) {
	files := Files{}
	if err := s.Flatten(tree, "", files); err != nil {
		return nil, err
	}
	return files, nil
}

// WriteCommit stores commit and returns its id.
func (s *Store) WriteCommit(commit *object.Commit) (plumbing.Hash, error) {
	obj := s.objects.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encoding commit: %w", err)
	}
	return s.set(obj, "commit")
}

// Commit returns commit h; its Tree and Parents read from this store.
func (s *Store) Commit(h plumbing.Hash) (*object.Commit, error) {
	c, err := object.GetCommit(s.objects, h)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", h, err)
	}
	return c, nil
}

// IsAncestor reports whether ancestor is reachable from descendant through
// parents (a commit is its own ancestor): the fast-forward test. A parent
// the store does not hold ends that line of history.
func (s *Store) IsAncestor(ancestor, descendant plumbing.Hash) bool {
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{descendant}
	for len(queue) > 0 {
		current := queue[0]
		queue = queue[1:]
		if current == ancestor {
			return true
		}
		if seen[current] {
			continue
		}
		seen[current] = true
		commit, err := s.Commit(current)
		if err != nil {
			continue
		}
		queue = append(queue, commit.ParentHashes...)
	}
	return false
}

// Ancestors are the commits reachable from h through parents, h included.
// A parent the store does not hold ends that line of history.
func (s *Store) Ancestors(h plumbing.Hash) map[plumbing.Hash]bool {
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{h}
	for len(queue) > 0 {
		current := queue[0]
		queue = queue[1:]
		if seen[current] {
			continue
		}
		commit, err := s.Commit(current)
		if err != nil {
			continue
		}
		seen[current] = true
		queue = append(queue, commit.ParentHashes...)
	}
	return seen
}

// MergeBase is what `git merge-base a b` answers: a common ancestor of a
// and b that is no ancestor of another common ancestor. Where several
// qualify (criss-cross merges) the lowest id is taken, so the answer is
// stable. ok is false when a and b share no history.
func (s *Store) MergeBase(a, b plumbing.Hash) (base plumbing.Hash, ok bool) {
	ofB := s.Ancestors(b)
	common := map[plumbing.Hash]bool{}
	for h := range s.Ancestors(a) {
		if ofB[h] {
			common[h] = true
		}
	}
	dominated := map[plumbing.Hash]bool{}
	for h := range common {
		commit, err := s.Commit(h)
		if err != nil {
			continue
		}
		for _, parent := range commit.ParentHashes {
			for ancestor := range s.Ancestors(parent) {
				dominated[ancestor] = true
			}
		}
	}
	for h := range common {
		if !dominated[h] && (!ok || h.String() < base.String()) {
			base, ok = h, true
		}
	}
	return base, ok
}

func (s *Store) set(obj plumbing.EncodedObject, kind string) (plumbing.Hash, error) {
	h, err := s.objects.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("storing %s: %w", kind, err)
	}
	return h, nil
}
