// Package gogit is the forge for plain Git remotes (SSH, HTTPS and file://),
// for hosts that offer no commit API. It speaks the Git protocol through
// go-git and keeps every object in memory: there is no clone directory and
// no worktree, and nothing is written to disk.
//
// A Client is meant to live as long as its branch worker. Its object store
// holds the snapshot (commit, trees, blobs) of the heads it last fetched or
// created, so the worker's first read costs one depth-1 fetch and a commit
// on top of the worker's own previous commit fetches nothing. Older
// snapshots are dropped as new ones arrive, so memory follows the size of
// one checkout, not of the history; and once the worker holds the files
// it read or pushed, it lets the blobs go (ReleaseBlobs), as the next
// commit needs only the trees. A server that allows object filters
// (partial clone) is not even asked for the blobs until one is read
// (uploadPack).
//
// Commits are built object by object in that store and pushed with a
// compare-and-swap on the branch: the push names the commit the branch must
// still point at, and receive-pack refuses the update if it moved.
//
// A plain Git remote has no pull requests: the client implements neither
// forges.PullRequester nor forges.BaseMerger. In pull-request mode the
// executor pushes the head branch only (with the same compare-and-swap) and
// says in the GitTarget's status that nobody opened a pull request for it;
// a human opens one, or points the GitProvider at the forge's API.
package gogit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configbutler/gitops-reverser/forges"
)

var (
	_ forges.Forge           = (*Client)(nil)
	_ forges.Prober          = (*Client)(nil)
	_ forges.DefaultBrancher = (*Client)(nil)
	_ forges.BlobReleaser    = (*Client)(nil)
	_ forges.MergeCommitter  = (*Client)(nil)
)

// Options configures a Client.
type Options struct {
	// URL of the repository: ssh://, scp-like (git@host:path), http(s):// or
	// file://.
	URL string
	// Auth is BasicAuth (HTTP(S)) or SSHKey (SSH); nil for file:// and for
	// anonymous HTTP(S).
	Auth Auth
}

// Auth is the credential for a remote: BasicAuth or SSHKey.
type Auth interface {
	isAuth()
}

// BasicAuth is HTTP basic authentication: a username and password, or a
// token as the password (with whatever username the host expects, for
// example "x-access-token" on GitHub).
type BasicAuth struct {
	Username string
	Password string
}

func (BasicAuth) isAuth() {}

// SSHKey is a private key for SSH, with the known_hosts that the server's
// host key is checked against. KnownHosts is required: host keys are never
// accepted unseen.
type SSHKey struct {
	// PEM is the private key (OpenSSH or PEM format).
	PEM []byte
	// Passphrase decrypts PEM when it is encrypted.
	Passphrase string
	// User is the SSH user; when empty, the user in the URL, else "git".
	User string
	// KnownHosts is the content of a known_hosts file listing the server.
	KnownHosts []byte
}

func (SSHKey) isAuth() {}

// Client is the forge for one remote repository. It is safe for concurrent
// use; calls are serialised because they share one object store.
type Client struct {
	url  string
	auth transport.AuthMethod

	mu sync.Mutex
	// objects is the in-memory object store; compact replaces it.
	objects *memory.Storage
	// snapshots are the commits whose objects the store keeps, by the
	// private ref they were fetched into or pushed from.
	snapshots map[plumbing.ReferenceName]snapshot
	// advertised is the last ls-remote answer, used to pick the ref that
	// brings a wanted commit in a fetch.
	advertised map[plumbing.ReferenceName]plumbing.Hash
	// remoteHead is the ref the remote's HEAD named in that answer, "" when
	// it named none.
	remoteHead plumbing.ReferenceName
	// fetches counts fetches over the Client's life, so tests can prove
	// that reads after the Client's own commits stay local.
	fetches int
	// fetchedObjects and fetchedBytes add up the objects and the bytes of
	// the packs those fetches received, so tests and benchmarks see
	// whether a fetch carried blobs.
	fetchedObjects int64
	fetchedBytes   int64
	// held names the blobs the caller holds (HoldBlobs): a fetch keeps
	// none of them. nil when it named none.
	held func(id string) ([]byte, bool)
	// partial is set when compact kept some blobs of a snapshot that
	// lacked others (fetched while blobs were held): the snapshot counts
	// as released, but its blobs stay until the next compact, which
	// ReleaseBlobs then runs.
	partial bool
}

// New returns a Client for opts.URL. It checks the credentials' shape (an
// SSH key needs known_hosts naming the server) but does not contact the
// remote; Probe does.
func New(opts Options) (*Client, error) {
	if opts.URL == "" {
		return nil, errors.New("creating git forge client: repository URL is empty")
	}
	endpoint, err := transport.NewEndpoint(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("creating git forge client: parsing repository URL: %w", err)
	}
	auth, err := newAuthMethod(endpoint, opts.Auth)
	if err != nil {
		// Not naming the URL: it may carry a password.
		return nil, fmt.Errorf("creating git forge client for a %s remote: %w", endpoint.Protocol, err)
	}
	return &Client{
		url:        opts.URL,
		auth:       auth,
		objects:    memory.NewStorage(),
		snapshots:  map[plumbing.ReferenceName]snapshot{},
		advertised: map[plumbing.ReferenceName]plumbing.Hash{},
	}, nil
}

// CommitURL returns "": a plain Git remote has no web UI to link to.
func (c *Client) CommitURL(string) string { return "" }

// CarriesSignatures is true: the commit is built here, and a request's
// signature goes into its gpgsig header (see writeCommit).
func (c *Client) CarriesSignatures() bool { return true }

// Head returns the commit branch points at on the remote, asking the remote
// (ls-remote) every time.
func (c *Client) Head(ctx context.Context, branch string) (string, error) {
	op := "read head of " + branch
	name, err := branchRefName(branch)
	if err != nil {
		return "", forges.Errorf(forges.KindNotFound, op, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	refs, err := c.listRemoteRefs(ctx)
	if err != nil {
		return "", classify(op, err)
	}
	head, ok := refs[name]
	if !ok {
		return "", forges.Errorf(forges.KindNotFound, op, fmt.Errorf("branch %q does not exist on the remote", branch))
	}
	return head.String(), nil
}

// DefaultBranch is the branch the remote's HEAD names, which ls-remote
// advertises as the capability symref=HEAD:refs/heads/<name>
// (https://git-scm.com/docs/protocol-capabilities#_symref); go-git guesses
// it from HEAD's commit for servers too old to send it. An empty
// repository, a detached HEAD and a HEAD naming a branch that does not
// exist all answer "": git advertises HEAD only when it resolves.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.listRemoteRefs(ctx); err != nil {
		if isEmptyRemote(err) {
			return "", nil
		}
		return "", classify("read default branch", err)
	}
	if !c.remoteHead.IsBranch() {
		return "", nil
	}
	return c.remoteHead.Short(), nil
}

// Probe lists the remote's refs, which proves the URL and the credentials.
// An empty repository passes: it answers with these credentials, and the
// first commit will create its branch.
func (c *Client) Probe(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.listRemoteRefs(ctx)
	if err == nil || isEmptyRemote(err) {
		return nil
	}
	return classify("probe repository", err)
}

// branchRefName is refs/heads/<branch>, refusing names Git would refuse.
func branchRefName(branch string) (plumbing.ReferenceName, error) {
	if branch == "" {
		return "", errors.New("branch name is empty")
	}
	name := plumbing.NewBranchReferenceName(branch)
	if err := name.Validate(); err != nil {
		return "", fmt.Errorf("invalid branch name %q: %w", branch, err)
	}
	return name, nil
}
