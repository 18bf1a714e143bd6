package gogit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"syscall"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/configbutler/gitops-reverser/forges"
)

// privateRefPrefix is where fetched and pushed heads are recorded in the
// object store, out of refs/heads and refs/remotes: the store has no
// branches of its own, only the snapshots it keeps.
const privateRefPrefix = "refs/gitops-reverser/"

// exactCommitRef records a commit fetched by id because no remote ref
// pointed at it; one slot is enough, as each such fetch replaces the last.
const exactCommitRef = plumbing.ReferenceName(privateRefPrefix + "commit")

// privateRef is where the store records the remote ref name:
// refs/heads/main -> refs/gitops-reverser/heads/main.
func privateRef(remote plumbing.ReferenceName) plumbing.ReferenceName {
	return plumbing.ReferenceName(privateRefPrefix + strings.TrimPrefix(remote.String(), "refs/"))
}

// remote is a go-git remote over the current object store, for ls-remote.
// It is cheap and made per call because compact replaces the store.
func (c *Client) remote() *git.Remote {
	return git.NewRemote(c.objects, &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{c.url}})
}

// listRemoteRefs runs ls-remote and remembers the answer for fetchCommit.
func (c *Client) listRemoteRefs(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	refs, err := c.remote().ListContext(ctx, &git.ListOptions{Auth: c.auth, PeelingOption: git.IgnorePeeled})
	if err != nil {
		if isEmptyRemote(err) {
			c.advertised = map[plumbing.ReferenceName]plumbing.Hash{}
			c.remoteHead = ""
		}
		return nil, err
	}
	advertised := make(map[plumbing.ReferenceName]plumbing.Hash, len(refs))
	c.remoteHead = ""
	for _, ref := range refs {
		switch {
		case ref.Type() == plumbing.HashReference && strings.HasPrefix(ref.Name().String(), "refs/"):
			advertised[ref.Name()] = ref.Hash()
		case ref.Type() == plumbing.SymbolicReference && ref.Name() == plumbing.HEAD:
			c.remoteHead = ref.Target()
		}
	}
	c.advertised = advertised
	return advertised, nil
}

// loadTree returns the tree of a commit from the store, fetching its
// snapshot first when it is not there: its commit and trees, without
// blobs when the server allows it (see uploadPack), as listing a tree and
// building a commit on it need no blob; Blob fetches them when one is
// read. preferred is the ref expected to point at it.
func (c *Client) loadTree(ctx context.Context, hash plumbing.Hash, preferred plumbing.ReferenceName) (plumbing.Hash, error) {
	tree, err := commitTree(c.objects, hash)
	if err == nil {
		return tree, nil
	}
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return plumbing.ZeroHash, fmt.Errorf("reading commit %s from memory: %w", hash, err)
	}
	if err := c.fetchCommit(ctx, hash, preferred, false); err != nil {
		return plumbing.ZeroHash, err
	}
	tree, err = commitTree(c.objects, hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return plumbing.ZeroHash, forges.Errorf(forges.KindNotFound, "read commit "+hash.String(),
			errors.New("the remote no longer has this commit at the head of any ref"))
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading fetched commit %s: %w", hash, err)
	}
	return tree, nil
}

// commitTree reads the tree a commit names from its first line, "tree
// <id>", without decoding the rest: a commit the worker made for a replay
// has a message listing every object it wrote (1.4 MB at 31,500), which
// decoding held several times over while the next commit was built.
func commitTree(objects storer.EncodedObjectStorer, hash plumbing.Hash) (plumbing.Hash, error) {
	encoded, err := objects.EncodedObject(plumbing.CommitObject, hash)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	reader, err := encoded.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer reader.Close() //nolint:errcheck // read only
	line, err := bufio.NewReaderSize(reader, 64).ReadString('\n')
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", hash, err)
	}
	tree, found := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "tree ")
	if !found || !plumbing.IsHash(tree) {
		return plumbing.ZeroHash, fmt.Errorf("commit %s does not start with its tree", hash)
	}
	return plumbing.NewHash(tree), nil
}

// fetchCommit brings the snapshot of want into the store with one depth-1
// fetch of the ref that points at it (preferred first), into a private
// ref. When no ref points at it, or the ref moved before the fetch, it
// asks for the commit by id instead. blobs false asks for the snapshot
// without its blobs (only servers that allow filters leave them out).
func (c *Client) fetchCommit(ctx context.Context, want plumbing.Hash, preferred plumbing.ReferenceName, blobs bool) error {
	source, found := c.refPointingAt(want, preferred)
	if !found {
		if _, err := c.listRemoteRefs(ctx); err != nil {
			return err
		}
		source, found = c.refPointingAt(want, preferred)
	}
	if !found {
		return c.fetchByID(ctx, want, blobs)
	}
	local := privateRef(source)
	if err := c.fetchInto(ctx, config.RefSpec("+"+source.String()+":"+local.String()), local, blobs); err != nil {
		return err
	}
	if _, err := c.objects.EncodedObject(plumbing.CommitObject, want); err == nil {
		return nil
	}
	return c.fetchByID(ctx, want, blobs)
}

// fetchByID fetches a commit no ref points at. Servers allow it only with
// uploadpack.allowReachableSHA1InWant (or the tip variant); otherwise the
// commit is, as far as this client can tell, gone.
func (c *Client) fetchByID(ctx context.Context, want plumbing.Hash, blobs bool) error {
	err := c.fetchInto(ctx, config.RefSpec("+"+want.String()+":"+exactCommitRef.String()), exactCommitRef, blobs)
	if errors.Is(err, git.ErrExactSHA1NotSupported) {
		return forges.Errorf(forges.KindNotFound, "fetch commit "+want.String(),
			fmt.Errorf("no remote ref points at it and the server does not serve commits by id: %w", err))
	}
	if hungUp(err) {
		// upload-pack answers a want it does not have ("not our ref") by
		// exiting; a client still writing its request then sees the pipe
		// close instead of that message.
		return forges.Errorf(forges.KindNotFound, "fetch commit "+want.String(),
			fmt.Errorf("the server hung up when asked for it, as it does for a commit it does not have: %w", err))
	}
	return err
}

// hungUp reports a server that closed the connection while the request
// was still being written. Over SSH a write to a channel the server has
// closed returns io.EOF, which go-git flattens into its message ("sending
// upload-req message: encoding flush-pkt: EOF"), so the words are matched too.
func hungUp(err error) bool {
	if err == nil {
		return false
	}
	message := err.Error()
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		strings.Contains(message, "broken pipe") ||
		(strings.Contains(message, "sending upload-req message") && strings.HasSuffix(message, ": EOF"))
}

// fetchInto runs one depth-1 fetch of spec, whose destination is local,
// and keeps the fetched snapshot: with its blobs, or, when blobs is false
// and the server left them out, like a released one (its trees only; a
// Blob of it fetches it again, with blobs).
func (c *Client) fetchInto(ctx context.Context, spec config.RefSpec, local plumbing.ReferenceName, blobs bool) error {
	c.fetches++
	filtered, err := c.uploadPack(ctx, spec, blobs)
	if err != nil {
		return err
	}
	fetched, err := c.objects.Reference(local)
	if err != nil {
		return fmt.Errorf("reading %s after fetching it: %w", local, err)
	}
	c.keepSnapshot(local, fetched.Hash(), !filtered)
	return nil
}

// refPointingAt finds, in the last ls-remote answer, a ref whose head is
// want: preferred if it qualifies, else the first branch, else any ref,
// in name order so the choice is stable.
func (c *Client) refPointingAt(want plumbing.Hash, preferred plumbing.ReferenceName) (plumbing.ReferenceName, bool) {
	if preferred != "" && c.advertised[preferred] == want {
		return preferred, true
	}
	var candidates []plumbing.ReferenceName
	for name, hash := range c.advertised {
		if hash == want {
			candidates = append(candidates, name)
		}
	}
	if len(candidates) == 0 {
		return "", false
	}
	sort.Slice(candidates, func(i, j int) bool {
		iBranch, jBranch := candidates[i].IsBranch(), candidates[j].IsBranch()
		if iBranch != jBranch {
			return iBranch
		}
		return candidates[i] < candidates[j]
	})
	return candidates[0], true
}
