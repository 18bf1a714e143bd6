package gitlab

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// project is one repository: real Git objects in memory and its branches.
type project struct {
	id            int
	path          string
	objects       *memory.Storage
	branches      map[string]plumbing.Hash
	defaultBranch string
}

// file is one entry of a flattened tree.
type file struct {
	blob plumbing.Hash
	mode filemode.FileMode
}

// files is a flattened tree: path → file.
type files map[string]file

func newProject(id int, path string) *project {
	return &project{id: id, path: path, objects: memory.NewStorage(), branches: map[string]plumbing.Hash{}}
}

func (p *project) empty() bool { return len(p.branches) == 0 }

func (p *project) writeBlob(content []byte) (plumbing.Hash, error) {
	obj := p.objects.NewEncodedObject()
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
	return p.objects.SetEncodedObject(obj)
}

func (p *project) blob(id plumbing.Hash) ([]byte, error) {
	obj, err := p.objects.EncodedObject(plumbing.BlobObject, id)
	if err != nil {
		return nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// writeTree stores the nested tree objects of a flattened tree and returns
// the root tree's id.
func (p *project) writeTree(all files) (plumbing.Hash, error) {
	return p.writeSubtree(all, "")
}

func (p *project) writeSubtree(all files, dir string) (plumbing.Hash, error) {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	var entries []object.TreeEntry
	seenDirs := map[string]bool{}
	for path, f := range all {
		if !strings.HasPrefix(path, prefix) {
			continue
		}
		rest := strings.TrimPrefix(path, prefix)
		name, _, nested := strings.Cut(rest, "/")
		if !nested {
			entries = append(entries, object.TreeEntry{Name: name, Mode: f.mode, Hash: f.blob})
			continue
		}
		if seenDirs[name] {
			continue
		}
		seenDirs[name] = true
		sub, err := p.writeSubtree(all, prefix+name)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: sub})
	}
	sortGitTreeEntries(entries)
	obj := p.objects.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return p.objects.SetEncodedObject(obj)
}

// sortGitTreeEntries orders entries as Git does: by name, a directory
// compared as if its name ended in "/". Git rejects trees in any other
// order, and the tree id depends on it.
func sortGitTreeEntries(entries []object.TreeEntry) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
}

// signature is a commit identity.
type signature struct {
	name, email string
}

func (p *project) writeCommit(tree plumbing.Hash, parents []plumbing.Hash, message string, author, committer signature, when time.Time) (plumbing.Hash, error) {
	commit := &object.Commit{
		Author:       object.Signature{Name: author.name, Email: author.email, When: when},
		Committer:    object.Signature{Name: committer.name, Email: committer.email, When: when},
		Message:      message,
		TreeHash:     tree,
		ParentHashes: parents,
	}
	obj := p.objects.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return p.objects.SetEncodedObject(obj)
}

func (p *project) commit(id plumbing.Hash) (*object.Commit, error) {
	return object.GetCommit(p.objects, id)
}

// resolve finds a commit by full id or branch name, as GitLab's ref
// parameters accept either.
func (p *project) resolve(ref string) (*object.Commit, bool) {
	if head, ok := p.branches[ref]; ok {
		c, err := p.commit(head)
		return c, err == nil
	}
	if !plumbing.IsHash(ref) {
		return nil, false
	}
	c, err := p.commit(plumbing.NewHash(ref))
	return c, err == nil
}

// filesOf flattens a commit's tree. Submodules are not files and are left
// out.
func (p *project) filesOf(c *object.Commit) (files, error) {
	out := files{}
	if c == nil {
		return out, nil
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	err = tree.Files().ForEach(func(f *object.File) error {
		out[f.Name] = file{blob: f.Hash, mode: f.Mode}
		return nil
	})
	return out, err
}

// lastCommitForPath is `git log -1 <from> -- path` on first-parent
// history: the newest commit whose parent had the path differently (or not
// at all). ok is false when no commit reachable from from touched it.
func (p *project) lastCommitForPath(from plumbing.Hash, path string) (plumbing.Hash, bool, error) {
	current, err := p.commit(from)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	for {
		here, hereOK, err := p.entryAt(current, path)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if len(current.ParentHashes) == 0 {
			return current.Hash, hereOK, nil
		}
		parent, err := p.commit(current.ParentHashes[0])
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		before, beforeOK, err := p.entryAt(parent, path)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if hereOK != beforeOK || here != before {
			return current.Hash, true, nil
		}
		current = parent
	}
}

func (p *project) entryAt(c *object.Commit, path string) (file, bool, error) {
	tree, err := c.Tree()
	if err != nil {
		return file{}, false, err
	}
	entry, err := tree.FindEntry(path)
	// A path through a file ("a.yaml/b") finds no tree object: also absent.
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) ||
		errors.Is(err, plumbing.ErrObjectNotFound) {
		return file{}, false, nil
	}
	if err != nil {
		return file{}, false, fmt.Errorf("reading %s at %s: %w", path, c.Hash, err)
	}
	return file{blob: entry.Hash, mode: entry.Mode}, true, nil
}
