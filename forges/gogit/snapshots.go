package gogit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
)

// snapshot is a commit the store keeps with its trees; blobs says whether
// its blobs are kept too. A commit on top of it needs only the trees on
// the changed paths, so once the worker holds the files (ReleaseBlobs,
// after it read them or pushed them) the blobs go: they were most of the
// store, a second copy of every mirrored file beside the worker's index.
type snapshot struct {
	commit plumbing.Hash
	blobs  bool
}

// keepSnapshot records that the store must keep commit (fetched into or
// pushed from the private ref local), with its blobs or only its trees,
// replacing what that ref held, and drops every object no kept snapshot
// needs.
func (c *Client) keepSnapshot(local plumbing.ReferenceName, commit plumbing.Hash, blobs bool) {
	c.snapshots[local] = snapshot{commit: commit, blobs: blobs}
	c.compact()
}

// keepsBlobsOf reports whether the store keeps the blobs of commit's
// snapshot, so that a commit built on it keeps them too. It is false for
// none: a commit that starts a branch afresh holds only blobs the worker
// wrote, and copying them all into the compacted store, to let them go at
// the worker's next ReleaseBlobs, was a replay's largest commit's peak.
func (c *Client) keepsBlobsOf(commit plumbing.Hash) bool {
	if commit.IsZero() {
		return false
	}
	for _, snap := range c.snapshots {
		if snap.commit == commit {
			return snap.blobs
		}
	}
	return true
}

// ReleaseBlobs drops the blobs of every snapshot the store keeps, keeping
// commits and trees: the branch worker calls it once its index holds the
// files, read or pushed (forges.BlobReleaser). A later Blob of a released
// snapshot fetches it again.
func (c *Client) ReleaseBlobs() {
	c.mu.Lock()
	defer c.mu.Unlock()
	held := c.partial
	for ref, snap := range c.snapshots {
		held = held || snap.blobs
		snap.blobs = false
		c.snapshots[ref] = snap
	}
	if held {
		c.compact()
	}
}

// compact replaces the object store with a fresh one holding only the kept
// snapshots: each commit with its trees, and its blobs when the snapshot
// keeps them, but not its parents. Without this the store would grow with
// every commit the worker makes and every head it fetches, for as long as
// the worker lives. Each kept commit is marked shallow, as its parents are
// gone, so later fetches tell the server exactly which history the store
// lacks.
//
// Only a snapshot with its blobs keeps its private ref: go-git offers the
// commits its refs name as haves, and a server told the store has a commit
// sends none of the blobs it shares with it. Snapshots with blobs are
// copied first, so a tree they share with one without is copied whole.
//
// Objects are shared between the two stores, not copied, so this costs
// one walk over the kept trees.
func (c *Client) compact() {
	kept := memory.NewStorage()
	c.partial = false
	shallow := make([]plumbing.Hash, 0, len(c.snapshots))
	for _, withBlobs := range []bool{true, false} {
		for ref, snap := range c.snapshots {
			if snap.blobs != withBlobs {
				continue
			}
			complete, err := copySnapshot(c.objects, kept, snap.commit, snap.blobs)
			if err != nil {
				// A snapshot with missing trees is useless; the next read
				// of that commit fetches it again.
				delete(c.snapshots, ref)
				continue
			}
			if snap.blobs && !complete {
				// Built on released blobs, or fetched while blobs were
				// held: it counts as having the trees only, and the
				// blobs it brought go with the next compact.
				snap.blobs = false
				c.snapshots[ref] = snap
				c.partial = true
			}
			if snap.blobs {
				_ = kept.SetReference(plumbing.NewHashReference(ref, snap.commit))
			}
			shallow = append(shallow, snap.commit)
		}
	}
	_ = kept.SetShallow(shallow)
	c.objects = kept
}

// restoreBlobs fetches again the snapshots kept without their blobs, for a
// Blob the store no longer has; false when every snapshot has its blobs.
// The store forgets them first: go-git does not ask for a commit it has.
func (c *Client) restoreBlobs(ctx context.Context) (bool, error) {
	released := map[plumbing.ReferenceName]plumbing.Hash{}
	for ref, snap := range c.snapshots {
		if !snap.blobs {
			released[ref] = snap.commit
			delete(c.snapshots, ref)
		}
	}
	if len(released) == 0 {
		return false, nil
	}
	c.compact()
	for ref, commit := range released {
		if err := c.fetchCommit(ctx, commit, remoteRef(ref), true); err != nil {
			return true, err
		}
	}
	return true, nil
}

// remoteRef is the remote ref a private ref records: the inverse of
// privateRef.
func remoteRef(local plumbing.ReferenceName) plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/" + strings.TrimPrefix(local.String(), privateRefPrefix))
}

// copySnapshot puts commit, its tree and everything below it from `from`
// into `to`; without blobs, the trees only. complete is false when a blob
// was not in `from`: released before a commit was built on its tree.
func copySnapshot(from storer.EncodedObjectStorer, to *memory.Storage, commit plumbing.Hash, blobs bool) (complete bool, err error) {
	commitObject, err := from.EncodedObject(plumbing.CommitObject, commit)
	if err != nil {
		return false, fmt.Errorf("keeping commit %s: %w", commit, err)
	}
	decoded, err := object.DecodeCommit(from, commitObject)
	if err != nil {
		return false, fmt.Errorf("keeping commit %s: %w", commit, err)
	}
	copier := &treeCopy{from: from, to: to, blobs: blobs}
	if err := copier.tree(decoded.TreeHash); err != nil {
		return false, fmt.Errorf("keeping the tree of commit %s: %w", commit, err)
	}
	_, err = to.SetEncodedObject(commitObject)
	return !copier.missingBlob, err
}

// treeCopy copies trees, and blobs when asked, from one store to another.
type treeCopy struct {
	from        storer.EncodedObjectStorer
	to          *memory.Storage
	blobs       bool
	missingBlob bool
}

func (c *treeCopy) tree(hash plumbing.Hash) error {
	if c.to.HasEncodedObject(hash) == nil {
		return nil
	}
	treeObject, err := c.from.EncodedObject(plumbing.TreeObject, hash)
	if err != nil {
		return fmt.Errorf("tree %s: %w", hash, err)
	}
	tree, err := object.DecodeTree(c.from, treeObject)
	if err != nil {
		return fmt.Errorf("tree %s: %w", hash, err)
	}
	for _, entry := range tree.Entries {
		switch entry.Mode {
		case filemode.Dir:
			if err := c.tree(entry.Hash); err != nil {
				return err
			}
		case filemode.Submodule:
			// A gitlink names a commit of another repository; there is no
			// object here to keep.
		default:
			if err := c.blob(entry); err != nil {
				return err
			}
		}
	}
	_, err = c.to.SetEncodedObject(treeObject)
	return err
}

func (c *treeCopy) blob(entry object.TreeEntry) error {
	if !c.blobs {
		return nil
	}
	blob, err := c.from.EncodedObject(plumbing.BlobObject, entry.Hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		c.missingBlob = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("blob %s at %s: %w", entry.Hash, entry.Name, err)
	}
	_, err = c.to.SetEncodedObject(blob)
	return err
}
