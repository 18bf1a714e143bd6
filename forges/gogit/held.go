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
	return sharedObject{kind: plumbing.BlobObject, hash: h, content: content}, nil
}

// sharedObject is a read-only object over bytes nobody changes: a held
// blob, the content of a file a commit puts (writeBlob), which the store
// then keeps without copying it, or a tree encoded at its exact size
// (encodeTree).
type sharedObject struct {
	kind    plumbing.ObjectType
	hash    plumbing.Hash
	content []byte
}

func newSharedBlob(content []byte) sharedObject {
	return newSharedObject(plumbing.BlobObject, content)
}

func newSharedObject(kind plumbing.ObjectType, content []byte) sharedObject {
	return sharedObject{kind: kind, hash: plumbing.ComputeHash(kind, content), content: content}
}

func (o sharedObject) Hash() plumbing.Hash         { return o.hash }
func (o sharedObject) Type() plumbing.ObjectType   { return o.kind }
func (o sharedObject) SetType(plumbing.ObjectType) {}
func (o sharedObject) Size() int64                 { return int64(len(o.content)) }
func (o sharedObject) SetSize(int64)               {}
func (o sharedObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.content)), nil
}
func (o sharedObject) Writer() (io.WriteCloser, error) {
	return nil, errors.New("a shared object is read-only")
}
