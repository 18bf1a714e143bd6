package gogit

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
)

// keepSnapshot records that the store must keep commit (fetched into or
// pushed from the private ref local), replacing what that ref held, and
// drops every object no kept snapshot needs.
func (c *Client) keepSnapshot(local plumbing.ReferenceName, commit plumbing.Hash) {
	c.snapshots[local] = commit
	c.compact()
}

// compact replaces the object store with a fresh one holding only the kept
// snapshots: each commit with its trees and blobs, but not its parents.
// Without this the store would grow with every commit the worker makes
// and every head it fetches, for as long as the worker lives. Each kept
// commit is marked shallow, as its parents are gone, so later fetches tell
// the server exactly which history the store lacks.
//
// Objects are shared between the two stores, not copied, so this costs
// one walk over the kept trees.
func (c *Client) compact() {
	kept := memory.NewStorage()
	shallow := make([]plumbing.Hash, 0, len(c.snapshots))
	for ref, commit := range c.snapshots {
		if err := copySnapshot(c.objects, kept, commit); err != nil {
			// A snapshot with missing objects is useless; the next read
			// of that commit fetches it again.
			delete(c.snapshots, ref)
			continue
		}
		_ = kept.SetReference(plumbing.NewHashReference(ref, commit))
		shallow = append(shallow, commit)
	}
	_ = kept.SetShallow(shallow)
	c.objects = kept
}

// copySnapshot puts commit, its tree and everything below it from `from`
// into `to`.
func copySnapshot(from storer.EncodedObjectStorer, to *memory.Storage, commit plumbing.Hash) error {
	commitObject, err := from.EncodedObject(plumbing.CommitObject, commit)
	if err != nil {
		return fmt.Errorf("keeping commit %s: %w", commit, err)
	}
	decoded, err := object.DecodeCommit(from, commitObject)
	if err != nil {
		return fmt.Errorf("keeping commit %s: %w", commit, err)
	}
	if err := copyTree(from, to, decoded.TreeHash); err != nil {
		return fmt.Errorf("keeping the tree of commit %s: %w", commit, err)
	}
	_, err = to.SetEncodedObject(commitObject)
	return err
}

func copyTree(from storer.EncodedObjectStorer, to *memory.Storage, hash plumbing.Hash) error {
	if to.HasEncodedObject(hash) == nil {
		return nil
	}
	treeObject, err := from.EncodedObject(plumbing.TreeObject, hash)
	if err != nil {
		return fmt.Errorf("tree %s: %w", hash, err)
	}
	tree, err := object.DecodeTree(from, treeObject)
	if err != nil {
		return fmt.Errorf("tree %s: %w", hash, err)
	}
	for _, entry := range tree.Entries {
		switch entry.Mode {
		case filemode.Dir:
			if err := copyTree(from, to, entry.Hash); err != nil {
				return err
			}
		case filemode.Submodule:
			// A gitlink names a commit of another repository; there is no
			// object here to keep.
		default:
			blob, err := from.EncodedObject(plumbing.BlobObject, entry.Hash)
			if err != nil {
				return fmt.Errorf("blob %s at %s: %w", entry.Hash, entry.Name, err)
			}
			if _, err := to.SetEncodedObject(blob); err != nil {
				return err
			}
		}
	}
	_, err = to.SetEncodedObject(treeObject)
	return err
}
