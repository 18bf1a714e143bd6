package gogit

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// treeBuilder applies file changes to a base tree in the object store. It
// loads only the directories on changed paths and writes only the trees
// that changed, so the cost of a commit follows the size of the change,
// not of the repository.
type treeBuilder struct {
	objects storer.EncodedObjectStorer
	base    plumbing.Hash
	root    *directory
	// written holds every object made for this commit, in order: exactly
	// what the remote may lack, so exactly what the push sends.
	written []plumbing.Hash
	seen    map[plumbing.Hash]bool
	// blobs maps each put path to its blob id.
	blobs map[string]string
}

// directory is a tree being edited: its entries by name, and whether an
// entry below it changed.
type directory struct {
	entries map[string]*treeItem
	changed bool
}

// treeItem is one entry; dir is the loaded subtree of a directory that
// lies on a changed path, nil otherwise.
type treeItem struct {
	mode filemode.FileMode
	hash plumbing.Hash
	dir  *directory
}

// newTreeBuilder starts from the tree base, or from an empty tree when
// base is the zero hash (an orphan commit).
func newTreeBuilder(objects storer.EncodedObjectStorer, base plumbing.Hash) (*treeBuilder, error) {
	root, err := loadDirectory(objects, base)
	if err != nil {
		return nil, err
	}
	return &treeBuilder{
		objects: objects,
		base:    base,
		root:    root,
		seen:    map[plumbing.Hash]bool{},
		blobs:   map[string]string{},
	}, nil
}

func loadDirectory(objects storer.EncodedObjectStorer, hash plumbing.Hash) (*directory, error) {
	dir := &directory{entries: map[string]*treeItem{}}
	if hash.IsZero() {
		return dir, nil
	}
	tree, err := object.GetTree(objects, hash)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", hash, err)
	}
	for _, entry := range tree.Entries {
		dir.entries[entry.Name] = &treeItem{mode: entry.Mode, hash: entry.Hash}
	}
	return dir, nil
}

// apply runs the changes in order, so a later change to a path wins.
func (b *treeBuilder) apply(changes []gitfile.Change) error {
	for _, change := range changes {
		if err := forges.ValidatePath(change.Path); err != nil {
			return fmt.Errorf("change to %q: %w", change.Path, err)
		}
		var err error
		if change.Delete {
			err = b.remove(change.Path)
		} else {
			err = b.put(change.Path, change.Content)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// put writes content at filePath, creating missing directories. An
// existing file keeps its executable bit; anything else becomes a regular
// file. A directory in the way is an error rather than silently dropped.
func (b *treeBuilder) put(filePath string, content []byte) error {
	parents, name := splitPath(filePath)
	chain, err := b.openDirectories(parents, true)
	if err != nil {
		return fmt.Errorf("put %s: %w", filePath, err)
	}
	parent := chain[len(chain)-1]
	existing := parent.entries[name]
	mode := filemode.Regular
	if existing != nil {
		if existing.mode == filemode.Dir {
			return fmt.Errorf("put %s: it is a directory", filePath)
		}
		if existing.mode == filemode.Executable {
			mode = filemode.Executable
		}
	}
	hash, err := b.writeBlob(content)
	if err != nil {
		return fmt.Errorf("put %s: %w", filePath, err)
	}
	b.blobs[filePath] = hash.String()
	if existing != nil && existing.hash == hash && existing.mode == mode {
		return nil
	}
	parent.entries[name] = &treeItem{mode: mode, hash: hash}
	markChanged(chain)
	return nil
}

// remove deletes the file at filePath; a path that does not exist is
// already deleted. Directories left empty disappear when the tree is
// written, as Git cannot store them.
func (b *treeBuilder) remove(filePath string) error {
	// A put earlier in the same commit is undone: the result must not
	// report a blob for a path the tree does not have.
	delete(b.blobs, filePath)
	parents, name := splitPath(filePath)
	chain, err := b.openDirectories(parents, false)
	if err != nil {
		return fmt.Errorf("delete %s: %w", filePath, err)
	}
	if chain == nil {
		return nil
	}
	parent := chain[len(chain)-1]
	existing := parent.entries[name]
	if existing == nil {
		return nil
	}
	if existing.mode == filemode.Dir {
		return fmt.Errorf("delete %s: it is a directory, not a file", filePath)
	}
	delete(parent.entries, name)
	markChanged(chain)
	return nil
}

// openDirectories loads (or, with create, makes) the directories along
// names and returns them from the root down. Without create, a missing
// directory or a file in the way returns a nil chain: there is nothing
// below it to change.
func (b *treeBuilder) openDirectories(names []string, create bool) ([]*directory, error) {
	chain := []*directory{b.root}
	current := b.root
	for i, name := range names {
		item := current.entries[name]
		switch {
		case item == nil && !create, item != nil && item.mode != filemode.Dir && !create:
			return nil, nil
		case item == nil:
			item = &treeItem{mode: filemode.Dir, dir: &directory{entries: map[string]*treeItem{}}}
			current.entries[name] = item
		case item.mode != filemode.Dir:
			return nil, fmt.Errorf("%s is a file, not a directory", strings.Join(names[:i+1], "/"))
		case item.dir == nil:
			loaded, err := loadDirectory(b.objects, item.hash)
			if err != nil {
				return nil, err
			}
			item.dir = loaded
		}
		current = item.dir
		chain = append(chain, current)
	}
	return chain, nil
}

func markChanged(chain []*directory) {
	for _, dir := range chain {
		dir.changed = true
	}
}

// write stores the changed trees and returns the root tree's id.
func (b *treeBuilder) write() (plumbing.Hash, error) {
	if !b.root.changed && !b.base.IsZero() {
		return b.base, nil
	}
	pruneEmptyDirectories(b.root)
	return b.writeDirectory(b.root)
}

// pruneEmptyDirectories drops changed subdirectories left without
// entries, deepest first, so removing a directory's last file removes the
// directory and, in turn, parents it leaves empty.
func pruneEmptyDirectories(dir *directory) {
	for name, item := range dir.entries {
		if item.dir == nil || !item.dir.changed {
			continue
		}
		pruneEmptyDirectories(item.dir)
		if len(item.dir.entries) == 0 {
			delete(dir.entries, name)
		}
	}
}

// writeDirectory writes dir's changed subtrees, then dir itself, with
// entries in Git's order (directories sort as if named with a trailing
// slash).
func (b *treeBuilder) writeDirectory(dir *directory) (plumbing.Hash, error) {
	tree := &object.Tree{Entries: make([]object.TreeEntry, 0, len(dir.entries))}
	for name, item := range dir.entries {
		if item.dir != nil && item.dir.changed {
			hash, err := b.writeDirectory(item.dir)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			item.hash = hash
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: name, Mode: item.mode, Hash: item.hash})
	}
	sort.Sort(object.TreeEntrySorter(tree.Entries))
	encoded, err := encodeTree(tree.Entries)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return b.store(encoded)
}

// encodeTree is the tree object of entries, in Git's order, as
// object.Tree.Encode writes it ("<mode in octal> <name>\0<id>" each), in
// one buffer of its exact size. Encode appends to a growing buffer in small
// writes: a replay's directories of thousands of files left several times
// their size behind while the commit was built.
func encodeTree(entries []object.TreeEntry) (sharedObject, error) {
	size, mode := 0, [12]byte{}
	for _, e := range entries {
		if strings.IndexByte(e.Name, 0) >= 0 {
			return sharedObject{}, fmt.Errorf("encoding a tree: malformed file name %q", e.Name)
		}
		size += len(strconv.AppendUint(mode[:0], uint64(e.Mode), 8)) + 1 + len(e.Name) + 1 + len(e.Hash)
	}
	content := make([]byte, 0, size)
	for _, e := range entries {
		content = strconv.AppendUint(content, uint64(e.Mode), 8)
		content = append(content, ' ')
		content = append(content, e.Name...)
		content = append(content, 0)
		content = append(content, e.Hash[:]...)
	}
	return newSharedObject(plumbing.TreeObject, content), nil
}

// writeBlob stores content as a blob without copying it: the change's
// content is the worker's own rendering, which it does not modify, and a
// copy was a second instance of every file a large commit writes until
// the store let its blobs go.
func (b *treeBuilder) writeBlob(content []byte) (plumbing.Hash, error) {
	return b.store(newSharedBlob(content))
}

// store puts an object in the store and records it for the push.
func (b *treeBuilder) store(encoded plumbing.EncodedObject) (plumbing.Hash, error) {
	hash, err := b.objects.SetEncodedObject(encoded)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("storing %s object: %w", encoded.Type(), err)
	}
	if !b.seen[hash] {
		b.seen[hash] = true
		b.written = append(b.written, hash)
	}
	return hash, nil
}

func splitPath(filePath string) (parents []string, name string) {
	segments := strings.Split(filePath, "/")
	return segments[:len(segments)-1], segments[len(segments)-1]
}
