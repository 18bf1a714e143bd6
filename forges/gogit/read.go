package gogit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configbutler/gitops-reverser/forges"
)

// Tree lists the files of commit below the directory prefix ("" or "." for
// the whole tree). A prefix that names no directory lists nothing. The
// commit's snapshot is fetched (depth 1) when the store does not have it.
// Submodules are not files and are left out.
func (c *Client) Tree(ctx context.Context, commit, prefix string) ([]forges.TreeEntry, error) {
	op := fmt.Sprintf("read tree of %s", commit)
	hash, err := parseObjectID(commit)
	if err != nil {
		return nil, forges.Errorf(forges.KindNotFound, op, err)
	}
	dir, err := forges.CleanPrefix(prefix)
	if err != nil {
		return nil, forges.Errorf(forges.KindNotFound, op, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tree, err := c.loadTree(ctx, hash, "")
	if err != nil {
		return nil, classify(op, err)
	}
	root, err := object.GetTree(c.objects, tree)
	if err != nil {
		return nil, fmt.Errorf("%s: reading root tree: %w", op, err)
	}
	subtree, found, err := c.descend(root, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if !found {
		return nil, nil
	}
	var entries []forges.TreeEntry
	if err := c.collectFiles(subtree, dir, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return entries, nil
}

// Blob returns the content of a blob of a snapshot the Client holds: one
// it fetched (through Tree or Commit) or created. A snapshot whose blobs
// the store lacks (fetched without them, or dropped by ReleaseBlobs) is
// fetched again, with them, once for every blob of it: concurrent calls
// wait on the Client's lock and the first brings them all. Plain Git
// cannot fetch a single blob, so any other blob is not found.
func (c *Client) Blob(ctx context.Context, id string) ([]byte, error) {
	op := "read blob " + id
	hash, err := parseObjectID(id)
	if err != nil {
		return nil, forges.Errorf(forges.KindNotFound, op, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	content, err := c.readBlob(hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		restored, restoreErr := c.restoreBlobs(ctx)
		if restored {
			content, err = c.readBlob(hash)
		}
		if restoreErr != nil && err != nil {
			// A ref that moved since the snapshot was fetched still
			// brings its new head, which most often has the blob too:
			// a blob is its content, whichever commit it came with.
			return nil, classify(op, restoreErr)
		}
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, forges.Errorf(forges.KindNotFound, op,
			errors.New("the blob is in no tree this client has read or written"))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return content, nil
}

func (c *Client) readBlob(hash plumbing.Hash) ([]byte, error) {
	blob, err := c.objects.EncodedObject(plumbing.BlobObject, hash)
	if err != nil {
		return nil, err
	}
	reader, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	// The worker keeps what it reads in its index: read into a buffer of
	// the blob's size, not io.ReadAll's doubling one (a 300-byte file held
	// 512 bytes).
	content := make([]byte, blob.Size())
	if _, err := io.ReadFull(reader, content); err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", hash, err)
	}
	return content, nil
}

// descend walks from root to the directory dir, one path segment at a
// time, so prefix "app" never matches "apps".
func (c *Client) descend(root *object.Tree, dir string) (*object.Tree, bool, error) {
	if dir == "" {
		return root, true, nil
	}
	current := root
	for _, segment := range strings.Split(dir, "/") {
		entry, ok := findEntry(current, segment)
		if !ok || entry.Mode != filemode.Dir {
			return nil, false, nil
		}
		next, err := object.GetTree(c.objects, entry.Hash)
		if err != nil {
			return nil, false, fmt.Errorf("reading tree %s at %s: %w", entry.Hash, dir, err)
		}
		current = next
	}
	return current, true, nil
}

func findEntry(tree *object.Tree, name string) (object.TreeEntry, bool) {
	for _, entry := range tree.Entries {
		if entry.Name == name {
			return entry, true
		}
	}
	return object.TreeEntry{}, false
}

// collectFiles appends every file below tree, whose path is dir.
func (c *Client) collectFiles(tree *object.Tree, dir string, out *[]forges.TreeEntry) error {
	for _, entry := range tree.Entries {
		full := path.Join(dir, entry.Name)
		switch entry.Mode {
		case filemode.Dir:
			subtree, err := object.GetTree(c.objects, entry.Hash)
			if err != nil {
				return fmt.Errorf("reading tree %s at %s: %w", entry.Hash, full, err)
			}
			if err := c.collectFiles(subtree, full, out); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			*out = append(*out, forges.TreeEntry{Path: full, BlobID: entry.Hash.String(), Mode: fileModeOf(entry.Mode)})
		}
	}
	return nil
}

// fileModeOf maps Git's file modes onto the three the forges share; the
// deprecated group-writable mode is a regular file.
func fileModeOf(mode filemode.FileMode) forges.FileMode {
	switch mode {
	case filemode.Executable:
		return forges.ModeExecutable
	case filemode.Symlink:
		return forges.ModeSymlink
	}
	return forges.ModeRegular
}

// parseObjectID accepts a full hexadecimal SHA-1 object id.
func parseObjectID(id string) (plumbing.Hash, error) {
	if !plumbing.IsHash(id) {
		return plumbing.ZeroHash, fmt.Errorf("%q is not a full SHA-1 object id", id)
	}
	return plumbing.NewHash(id), nil
}
