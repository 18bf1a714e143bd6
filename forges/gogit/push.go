package gogit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"

	"github.com/configbutler/gitops-reverser/forges"
)

// packDeltaWindow is how many objects the pack encoder compares each
// object with to find deltas; Git's default.
const packDeltaWindow = 10

// maxDeltaSearchObjects bounds the packs the encoder searches for deltas.
// go-git's search holds every delta it finds until the pack is written,
// and a replay's push carries tens of thousands of similar files: for
// 50,000 ConfigMaps it was about 10 MB at the commit's peak and a quarter
// of the worker's CPU, to make the pack 26% smaller (7.4 MB against 10.1
// MB). A push of live changes carries a few objects, with little to find
// and little to hold, and keeps the search (docs/benchmarks.md, K).
const maxDeltaSearchObjects = 1000

// deltaWindow is the delta search window for a pack of n objects: none
// past maxDeltaSearchObjects.
func deltaWindow(n int) uint {
	if n > maxDeltaSearchObjects {
		return 0
	}
	return packDeltaWindow
}

// push sends objects and moves branch from expected to commit in one
// receive-pack session, as a compare-and-swap:
//
//   - the head the server advertises must be expected (absent when expected
//     is zero), checked before any object is sent; and
//   - the update command itself names expected as the old value, which
//     receive-pack verifies under the ref lock, so a writer that moves the
//     branch after the advertisement still makes the update fail.
//
// go-git's Remote.Push is not used because its options cannot say "the
// branch must not exist" (RequireRemoteRefs demands a ref, ForceWithLease
// needs a remote-tracking ref), and its client-side fast-forward check
// walks history that a depth-1 store does not have.
func (c *Client) push(ctx context.Context, branch plumbing.ReferenceName, expected, commit plumbing.Hash, objects []plumbing.Hash) (err error) {
	session, err := c.openReceivePack()
	if err != nil {
		return err
	}
	defer func() {
		if closeErr := session.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("closing the push session: %w", closeErr)
		}
	}()
	advertised, err := session.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	if err := checkAdvertisedHead(advertised, branch, expected); err != nil {
		return err
	}
	request := packp.NewReferenceUpdateRequestFromCapabilities(advertised.Capabilities)
	request.Commands = []*packp.Command{{Name: branch, Old: expected, New: commit}}
	useRefDeltas := !advertised.Capabilities.Supports(capability.OFSDelta)
	report, err := sendPack(ctx, session, c.objects, request, objects, useRefDeltas)
	if err != nil {
		return err
	}
	return checkReport(report)
}

// openReceivePack starts a push session. The endpoint is parsed per call
// because go-git's HTTP transport rewrites it in place on redirects.
func (c *Client) openReceivePack() (transport.ReceivePackSession, error) {
	gitTransport, endpoint, err := c.transport()
	if err != nil {
		return nil, err
	}
	return gitTransport.NewReceivePackSession(endpoint, c.auth)
}

// transport is go-git's client for the remote's protocol, and the remote
// as it names it.
func (c *Client) transport() (transport.Transport, *transport.Endpoint, error) {
	endpoint, err := transport.NewEndpoint(c.url)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing repository URL: %w", err)
	}
	gitTransport, err := client.NewClient(endpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("choosing a transport for %s: %w", endpoint.Protocol, err)
	}
	return gitTransport, endpoint, nil
}

func checkAdvertisedHead(advertised *packp.AdvRefs, branch plumbing.ReferenceName, expected plumbing.Hash) error {
	refs, err := advertised.AllReferences()
	if err != nil {
		return fmt.Errorf("reading the refs the remote advertised: %w", err)
	}
	current, err := refs.Reference(branch)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		if expected.IsZero() {
			return nil
		}
		return forges.Errorf(forges.KindConflict, "push",
			fmt.Errorf("%s no longer exists; expected it at %s", branch, expected))
	case err != nil:
		return fmt.Errorf("reading %s from the advertised refs: %w", branch, err)
	case expected.IsZero():
		return forges.Errorf(forges.KindConflict, "push",
			fmt.Errorf("%s already exists at %s; expected it not to exist", branch, current.Hash()))
	case current.Hash() != expected:
		return forges.Errorf(forges.KindConflict, "push",
			fmt.Errorf("%s moved to %s; expected it at %s", branch, current.Hash(), expected))
	}
	return nil
}

// sendPack streams a packfile of objects into the update request while
// receive-pack reads it, as go-git's own push does.
func sendPack(ctx context.Context, session transport.ReceivePackSession, objects storer.EncodedObjectStorer,
	request *packp.ReferenceUpdateRequest, hashes []plumbing.Hash, useRefDeltas bool,
) (*packp.ReportStatus, error) {
	reader, writer := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		_, err := packfile.NewEncoder(writer, objects, useRefDeltas).Encode(hashes, deltaWindow(len(hashes)))
		_ = writer.CloseWithError(err)
		encoded <- err
	}()
	request.Packfile = reader
	report, err := session.ReceivePack(ctx, request)
	if err != nil {
		// Unblocks the encoder if the session stopped reading.
		_ = reader.CloseWithError(err)
		<-encoded
		return nil, err
	}
	if err := <-encoded; err != nil {
		return nil, fmt.Errorf("encoding the pack to push: %w", err)
	}
	return report, nil
}

// checkReport turns receive-pack's per-ref answer into the vocabulary: a
// ref that was not at the old value is a conflict; a hook or branch
// protection refusing the update is forbidden.
func checkReport(report *packp.ReportStatus) error {
	if report == nil {
		return nil
	}
	if report.UnpackStatus != "ok" {
		return forges.Errorf(forges.KindTransient, "push",
			fmt.Errorf("the remote could not unpack the pushed objects: %s", report.UnpackStatus))
	}
	for _, status := range report.CommandStatuses {
		if status.Status == "ok" {
			continue
		}
		refusal := fmt.Errorf("the remote refused to update %s: %s", status.ReferenceName, status.Status)
		switch {
		case isRefUpdateConflict(status.Status):
			return forges.Errorf(forges.KindConflict, "push", refusal)
		case isPolicyRefusal(status.Status):
			return forges.Errorf(forges.KindForbidden, "push", refusal)
		}
		return forges.Errorf(forges.KindTransient, "push", refusal)
	}
	return nil
}

// isPolicyRefusal recognises receive-pack statuses for updates the server
// will not allow whatever the head: hooks ("pre-receive hook declined"),
// protected branches, denyCurrentBranch.
func isPolicyRefusal(status string) bool {
	for _, phrase := range [...]string{"declined", "denied", "deny", "protected", "refusing", "checked out"} {
		if strings.Contains(status, phrase) {
			return true
		}
	}
	return false
}
