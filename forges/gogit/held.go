package gogit

import (
	"bytes"
	"errors"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configbutler/gitops-reverser/forges"
)

var _ forges.BlobHolder = (*Client)(nil)

// HoldBlobs names the blobs the caller holds (forges.BlobHolder): until
// HoldBlobs(nil), a fetch stores none of them. A fetch for a tree asks
// the server for no blob at all when it allows filters (uploadPack); one
// that does not, and the fetch that brings blobs back for Blob, send the
// whole snapshot, so the filter is also the store the pack is parsed
// into: it drops a held blob as the parser stores it and answers it from
// held when a delta in the pack names it as its base.
func (c *Client) HoldBlobs(held func(id string) ([]byte, bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = held
}

// heldStore is the object store as a fetch sees it while blobs are held.
// A snapshot fetched through it lacks the held blobs, so compact keeps it
// without blobs (copySnapshot reports it incomplete) and a later Blob of
// one fetches the snapshot again, unfiltered.
type heldStore struct {
	*memory.Storage
	held func(id string) ([]byte, bool)
}

// SetEncodedObject drops a held blob; the parser asks for it again only
// through EncodedObject.
func (s heldStore) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	if obj.Type() == plumbing.BlobObject {
		if _, ok := s.held(obj.Hash().String()); ok {
			return obj.Hash(), nil
		}
	}
	return s.Storage.SetEncodedObject(obj)
}

// EncodedObject answers a held blob the store does not have from held,
// without copying it.
func (s heldStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, err := s.Storage.EncodedObject(t, h)
	if !errors.Is(err, plumbing.ErrObjectNotFound) || (t != plumbing.AnyObject && t != plumbing.BlobObject) {
		return obj, err
	}
	content, ok := s.held(h.String())
	if !ok {
		return nil, err
	}
	return sharedBlob{hash: h, content: content}, nil
}

// sharedBlob is a read-only blob over bytes the caller owns and never
// changes: a held blob, or the content of a file a commit puts (writeBlob),
// which the store then keeps without copying it.
type sharedBlob struct {
	hash    plumbing.Hash
	content []byte
}

func newSharedBlob(content []byte) sharedBlob {
	return sharedBlob{hash: plumbing.ComputeHash(plumbing.BlobObject, content), content: content}
}

func (b sharedBlob) Hash() plumbing.Hash         { return b.hash }
func (b sharedBlob) Type() plumbing.ObjectType   { return plumbing.BlobObject }
func (b sharedBlob) SetType(plumbing.ObjectType) {}
func (b sharedBlob) Size() int64                 { return int64(len(b.content)) }
func (b sharedBlob) SetSize(int64)               {}
func (b sharedBlob) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(b.content)), nil
}
func (b sharedBlob) Writer() (io.WriteCloser, error) {
	return nil, errors.New("a shared blob is read-only")
}
