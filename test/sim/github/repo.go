package github

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// repository is one simulated repository: real Git objects in go-git's
// memory storage, so every id the API hands out is the SHA-1 Git itself
// would compute, and branch heads.
type repository struct {
	id            int64
	owner, name   string
	objects       *memory.Storage
	branches      map[string]plumbing.Hash
	defaultBranch string
	// appSigned are commits GitHub signed as the App: made with an
	// installation token and no author, committer or signature.
	appSigned map[plumbing.Hash]bool
}

func newRepository(id int64, owner, name string) *repository {
	return &repository{
		id: id, owner: owner, name: name,
		objects:       memory.NewStorage(),
		branches:      map[string]plumbing.Hash{},
		appSigned:     map[plumbing.Hash]bool{},
		defaultBranch: "main",
	}
}

// empty: no commit on any branch, which is when GitHub's Git Database API
// answers 409 (docGitDatabase).
func (r *repository) empty() bool { return len(r.branches) == 0 }

func (r *repository) storeBlob(content []byte) (plumbing.Hash, error) {
	obj := r.objects.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.objects.SetEncodedObject(obj)
}

// storeTree writes a tree object with entries in Git's canonical order:
// by name, a subtree sorting as if its name ended in "/".
func (r *repository) storeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	sortKey := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return sortKey(entries[i]) < sortKey(entries[j]) })
	obj := r.objects.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.objects.SetEncodedObject(obj)
}

func (r *repository) storeCommit(commit *object.Commit) (plumbing.Hash, error) {
	obj := r.objects.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.objects.SetEncodedObject(obj)
}

func (r *repository) commit(h plumbing.Hash) (*object.Commit, error) {
	return object.GetCommit(r.objects, h)
}

func (r *repository) tree(h plumbing.Hash) (*object.Tree, error) {
	return object.GetTree(r.objects, h)
}

func (r *repository) blob(h plumbing.Hash) ([]byte, error) {
	blob, err := object.GetBlob(r.objects, h)
	if err != nil {
		return nil, err
	}
	reader, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	return io.ReadAll(reader)
}

func (r *repository) hasObject(t plumbing.ObjectType, h plumbing.Hash) bool {
	_, err := r.objects.EncodedObject(t, h)
	return err == nil
}

// isAncestor reports whether ancestor is reachable from descendant through
// parents (a commit is its own ancestor): the fast-forward test of
// "Update a reference" with force false (docRefs).
func (r *repository) isAncestor(ancestor, descendant plumbing.Hash) bool {
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
		commit, err := r.commit(current)
		if err != nil {
			continue
		}
		queue = append(queue, commit.ParentHashes...)
	}
	return false
}

// fileEntry is a non-tree entry of a flattened tree: a blob, a symlink or a
// submodule, with its mode.
type fileEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

// flatten lists every non-tree entry below tree as path → entry, paths
// joined onto prefix.
func (r *repository) flatten(tree plumbing.Hash, prefix string, out map[string]fileEntry) error {
	t, err := r.tree(tree)
	if err != nil {
		return fmt.Errorf("reading tree %s: %w", tree, err)
	}
	for _, entry := range t.Entries {
		full := entry.Name
		if prefix != "" {
			full = prefix + "/" + entry.Name
		}
		if entry.Mode == filemode.Dir {
			if err := r.flatten(entry.Hash, full, out); err != nil {
				return err
			}
			continue
		}
		out[full] = fileEntry{mode: entry.Mode, hash: entry.Hash}
	}
	return nil
}

// buildTree writes the nested trees for a flat path → entry map and returns
// the root tree's id.
func (r *repository) buildTree(files map[string]fileEntry) (plumbing.Hash, error) {
	var direct []object.TreeEntry
	subdirs := map[string]map[string]fileEntry{}
	for path, entry := range files {
		dir, rest, nested := strings.Cut(path, "/")
		if !nested {
			direct = append(direct, object.TreeEntry{Name: path, Mode: entry.mode, Hash: entry.hash})
			continue
		}
		if subdirs[dir] == nil {
			subdirs[dir] = map[string]fileEntry{}
		}
		subdirs[dir][rest] = entry
	}
	for dir, sub := range subdirs {
		h, err := r.buildTree(sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		direct = append(direct, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h})
	}
	return r.storeTree(direct)
}

// errPathMissing: a deletion names a path the base tree does not have,
// which "Create a tree" refuses ("Returns an error if you try to delete a
// file that does not exist", docTrees).
var errPathMissing = errors.New("path does not exist")

// deletePath removes a file, or a whole directory, from a flattened tree.
func deletePath(files map[string]fileEntry, path string) error {
	if _, ok := files[path]; ok {
		delete(files, path)
		return nil
	}
	removed := false
	for existing := range files {
		if strings.HasPrefix(existing, path+"/") {
			delete(files, existing)
			removed = true
		}
	}
	if !removed {
		return fmt.Errorf("%w: %s", errPathMissing, path)
	}
	return nil
}

// putPath sets path to entry, replacing a file where a directory must go
// and a directory where the file goes.
func putPath(files map[string]fileEntry, path string, entry fileEntry) {
	for dir := path; ; {
		i := strings.LastIndex(dir, "/")
		if i < 0 {
			break
		}
		dir = dir[:i]
		delete(files, dir)
	}
	for existing := range files {
		if strings.HasPrefix(existing, path+"/") {
			delete(files, existing)
		}
	}
	files[path] = entry
}

// filesAt returns the flattened tree at the head of branch; ok is false
// when the branch does not exist.
func (r *repository) filesAt(branch string) (map[string]fileEntry, bool, error) {
	head, ok := r.branches[branch]
	if !ok {
		return nil, false, nil
	}
	commit, err := r.commit(head)
	if err != nil {
		return nil, false, err
	}
	files := map[string]fileEntry{}
	if err := r.flatten(commit.TreeHash, "", files); err != nil {
		return nil, false, err
	}
	return files, true, nil
}
