package gogit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// withoutBlobs is the object filter of a snapshot fetched for its trees:
// git's partial-clone filter "blob:none", which makes upload-pack leave
// every blob out of the pack (https://git-scm.com/docs/partial-clone,
// https://git-scm.com/docs/git-rev-list#Documentation/git-rev-list.txt---filterltfilter-specgt).
var withoutBlobs = packp.FilterBlobNone()

// uploadPack runs one depth-1 fetch of spec's source (a remote ref, or a
// commit id) into the private ref spec names, in one upload-pack session,
// and reports whether the server left the blobs out.
//
// go-git's Remote.Fetch is not used because its options have no object
// filter (go-git v5 has packp.UploadRequest.Filter in its plumbing but no
// FetchOptions field for it). This is the part of that fetch the store
// needs: one want, the store's snapshots as haves, depth 1 with the
// store's shallow commits, and the pack parsed into the store.
//
// With blobs false it asks for "filter blob:none" when the server
// advertises the "filter" capability, which upload-pack does only when
// uploadpack.allowFilter is set
// (https://git-scm.com/docs/protocol-capabilities#_filter,
// https://git-scm.com/docs/git-config#Documentation/git-config.txt-uploadpackallowFilter).
// A server that does not advertise it is asked as before, and sends the
// whole snapshot.
func (c *Client) uploadPack(ctx context.Context, spec config.RefSpec, blobs bool) (filtered bool, err error) {
	session, err := c.openUploadPack()
	if err != nil {
		return false, err
	}
	defer func() {
		if closeErr := session.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("closing the fetch session: %w", closeErr)
		}
	}()
	advertised, err := session.AdvertisedReferencesContext(ctx)
	if err != nil {
		return false, err
	}
	want, err := wantedCommit(advertised, spec)
	if err != nil {
		return false, err
	}
	local := spec.Dst("")
	if c.objects.HasEncodedObject(want) == nil {
		// Already in the store (a kept snapshot): go-git's fetch asks for
		// nothing then either, and only moves the ref.
		return false, c.objects.SetReference(plumbing.NewHashReference(local, want))
	}
	request, filtered, err := c.uploadRequest(advertised.Capabilities, want, blobs)
	if err != nil {
		return false, err
	}
	response, err := session.UploadPack(ctx, request)
	if err != nil {
		return false, err
	}
	defer func() {
		if closeErr := response.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("closing the fetched pack: %w", closeErr)
		}
	}()
	if err := c.addShallows(response.Shallows); err != nil {
		return false, err
	}
	if err := c.parsePack(withSideband(request.Capabilities, response)); err != nil {
		return false, err
	}
	return filtered, c.objects.SetReference(plumbing.NewHashReference(local, want))
}

// openUploadPack opens a fetch session with the remote, as openReceivePack
// does a push session.
func (c *Client) openUploadPack() (transport.UploadPackSession, error) {
	gitTransport, endpoint, err := c.transport()
	if err != nil {
		return nil, err
	}
	return gitTransport.NewUploadPackSession(endpoint, c.auth)
}

// wantedCommit is the commit spec's source names on the remote: the head
// of the advertised ref, or the id itself, which the server serves only
// when it says so (as go-git's fetch checks: ErrExactSHA1NotSupported).
func wantedCommit(advertised *packp.AdvRefs, spec config.RefSpec) (plumbing.Hash, error) {
	if spec.IsExactSHA1() {
		if !advertised.Capabilities.Supports(capability.AllowReachableSHA1InWant) &&
			!advertised.Capabilities.Supports(capability.AllowTipSHA1InWant) {
			return plumbing.ZeroHash, git.ErrExactSHA1NotSupported
		}
		return plumbing.NewHash(spec.Src()), nil
	}
	refs, err := advertised.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading the refs the remote advertised: %w", err)
	}
	ref, err := refs.Reference(plumbing.ReferenceName(spec.Src()))
	if errors.Is(err, plumbing.ErrReferenceNotFound) || (err == nil && ref.Type() != plumbing.HashReference) {
		return plumbing.ZeroHash, noRemoteRefError{name: spec.Src()}
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading remote ref %s: %w", spec.Src(), err)
	}
	return ref.Hash(), nil
}

// noRemoteRefError is go-git's NoMatchingRefSpecError for a ref the remote
// no longer advertises, which classify maps to not found; go-git's own
// cannot be built outside go-git with the ref's name in it.
type noRemoteRefError struct{ name string }

func (e noRemoteRefError) Error() string { return fmt.Sprintf("couldn't find remote ref %q", e.name) }

func (e noRemoteRefError) Is(target error) bool {
	_, ok := target.(git.NoMatchingRefSpecError)
	return ok
}

// uploadRequest asks for want at depth 1, as go-git's fetch does
// (newUploadPackRequest, getHaves), and without blobs when blobs is false
// and the server allows filters. The haves are the commits of the
// snapshots kept with their blobs (the only ones whose private ref
// compact keeps): the server sends none of the objects they share with
// want. The store's shallow commits tell it the store has no history
// behind them.
func (c *Client) uploadRequest(advertised *capability.List, want plumbing.Hash, blobs bool) (*packp.UploadPackRequest, bool, error) {
	request := packp.NewUploadPackRequestFromCapabilities(advertised)
	request.Depth = packp.DepthCommits(1)
	if err := request.Capabilities.Set(capability.Shallow); err != nil {
		return nil, false, err
	}
	if advertised.Supports(capability.NoProgress) {
		if err := request.Capabilities.Set(capability.NoProgress); err != nil {
			return nil, false, err
		}
	}
	filtered := !blobs && advertised.Supports(capability.Filter)
	if filtered {
		// upload-pack reads "filter" lines only from a client that named
		// the capability in its first want line.
		if err := request.Capabilities.Set(capability.Filter); err != nil {
			return nil, false, err
		}
		request.Filter = withoutBlobs
	}
	request.Wants = []plumbing.Hash{want}
	shallows, err := c.objects.Shallow()
	if err != nil {
		return nil, false, fmt.Errorf("reading the store's shallow commits: %w", err)
	}
	request.Shallows = shallows
	refs, err := c.objects.IterReferences()
	if err != nil {
		return nil, false, fmt.Errorf("reading the store's refs: %w", err)
	}
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && strings.HasPrefix(ref.Name().String(), privateRefPrefix) &&
			c.objects.HasEncodedObject(ref.Hash()) == nil {
			request.Haves = append(request.Haves, ref.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("reading the store's refs: %w", err)
	}
	return request, filtered, nil
}

// addShallows records the commits the server cut the history at, as
// go-git's fetch does (updateShallow).
func (c *Client) addShallows(cut []plumbing.Hash) error {
	if len(cut) == 0 {
		return nil
	}
	shallows, err := c.objects.Shallow()
	if err != nil {
		return fmt.Errorf("reading the store's shallow commits: %w", err)
	}
	known := make(map[plumbing.Hash]bool, len(shallows))
	for _, hash := range shallows {
		known[hash] = true
	}
	for _, hash := range cut {
		if !known[hash] {
			shallows = append(shallows, hash)
			known[hash] = true
		}
	}
	return c.objects.SetShallow(shallows)
}

// withSideband demultiplexes the pack from progress messages when the
// request asked for a side band, as go-git's fetch does
// (buildSidebandIfSupported).
func withSideband(requested *capability.List, response io.Reader) io.Reader {
	switch {
	case requested.Supports(capability.Sideband64k):
		return sideband.NewDemuxer(sideband.Sideband64k, response)
	case requested.Supports(capability.Sideband):
		return sideband.NewDemuxer(sideband.Sideband, response)
	}
	return response
}

// parsePack stores the pack's objects, through heldStore while blobs are
// held, and counts the pack's bytes and objects (fetchedBytes,
// fetchedObjects) so tests and benchmarks see what a fetch carried. It is
// packfile.UpdateObjectStorage with a counter, the store having no pack
// writer of its own.
func (c *Client) parsePack(pack io.Reader) error {
	var store storer.EncodedObjectStorer = c.objects
	if c.held != nil {
		store = heldStore{Storage: c.objects, held: c.held}
	}
	counted := &countingReader{reader: pack}
	parser, err := packfile.NewParserWithStorage(packfile.NewScanner(counted), store, &packCounter{objects: &c.fetchedObjects})
	if err == nil {
		_, err = parser.Parse()
	}
	c.fetchedBytes += counted.bytes
	if err != nil {
		return fmt.Errorf("reading the fetched pack: %w", err)
	}
	return nil
}

type countingReader struct {
	reader io.Reader
	bytes  int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.reader.Read(p)
	r.bytes += int64(n)
	return n, err
}

// packCounter adds the object count of a pack's header to objects.
type packCounter struct{ objects *int64 }

func (p *packCounter) OnHeader(count uint32) error {
	*p.objects += int64(count)
	return nil
}

func (*packCounter) OnInflatedObjectHeader(plumbing.ObjectType, int64, int64) error { return nil }
func (*packCounter) OnInflatedObjectContent(plumbing.Hash, int64, uint32, []byte) error {
	return nil
}
func (*packCounter) OnFooter(plumbing.Hash) error { return nil }
