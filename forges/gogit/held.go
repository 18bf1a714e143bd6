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
// HoldBlobs(nil), a fetch stores none of them. go-git v5 has no blob
// filter on fetch (the server sends the whole depth-1 snapshot), so the
// filter is the store the pack is parsed into: it drops a held blob as
// the parser stores it and answers it from held when a delta in the pack
// names it as its base.
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
	return heldBlob{hash: h, content: content}, nil
}

// heldBlob is a read-only blob over the holder's bytes.
type heldBlob struct {
	hash    plumbing.Hash
	content []byte
}

func (b heldBlob) Hash() plumbing.Hash         { return b.hash }
func (b heldBlob) Type() plumbing.ObjectType   { return plumbing.BlobObject }
func (b heldBlob) SetType(plumbing.ObjectType) {}
func (b heldBlob) Size() int64                 { return int64(len(b.content)) }
func (b heldBlob) SetSize(int64)               {}
func (b heldBlob) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(b.content)), nil
}
func (b heldBlob) Writer() (io.WriteCloser, error) {
	return nil, errors.New("a held blob is read-only")
}
