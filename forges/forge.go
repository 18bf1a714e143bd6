package forges

import (
	"context"
	"errors"
	"time"

	"github.com/configbutler/gitops-reverser/gitfile"
)

// FileMode is the Git mode of a tree entry.
type FileMode uint32

const (
	// ModeRegular is a regular, non-executable file.
	ModeRegular FileMode = 0o100644
	// ModeExecutable is an executable file.
	ModeExecutable FileMode = 0o100755
	// ModeSymlink is a symbolic link.
	ModeSymlink FileMode = 0o120000
)

// TreeEntry is one file in a commit's tree.
type TreeEntry struct {
	// Path relative to the repository root, with forward slashes.
	Path string
	// BlobID is the Git object id of the content.
	BlobID string
	Mode   FileMode
}

// Reader reads a repository without cloning it.
type Reader interface {
	// Head returns the commit the branch points at. A missing branch is
	// ErrNotFound; an empty repository is ErrEmptyRepository.
	Head(ctx context.Context, branch string) (string, error)
	// Tree lists the files of commit below prefix ("" or "." for all).
	Tree(ctx context.Context, commit, prefix string) ([]TreeEntry, error)
	// Blob returns the content of a blob. Blobs are content-addressed, so
	// callers may cache the result forever.
	Blob(ctx context.Context, id string) ([]byte, error)
}

// ConcurrentReader is implemented by forges that serve several reads at
// once. A forge that does not say takes one read at a time: GitHub asks
// clients to make requests serially
// (https://docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#avoid-concurrent-requests).
type ConcurrentReader interface {
	// ReadConcurrency is how many blob reads a caller may keep in flight.
	ReadConcurrency() int
}

// ReadConcurrency is how many blob reads r takes at once: at least one.
func ReadConcurrency(r Reader) int {
	if c, ok := r.(ConcurrentReader); ok && c.ReadConcurrency() > 1 {
		return c.ReadConcurrency()
	}
	return 1
}

// DefaultBrancher is implemented by forges that can tell which branch the
// repository's HEAD names: the branch a clone checks out and pull requests
// target by default. The branch worker starts a new branch from its head, so
// the new branch shares history with it rather than starting an orphan one.
type DefaultBrancher interface {
	// DefaultBranch returns the default branch's name. A repository without
	// commits has no default branch yet and answers ("", nil), even where the
	// forge already has a name configured for the first branch.
	DefaultBranch(ctx context.Context) (string, error)
}

// HistoryReader is implemented by forges that can tell whether a commit is
// part of a branch's history. The watches' resume cursors hold only for the
// history they were stored against: a branch rewritten behind the commit
// they were settled on (a force-push) has lost changes they count as
// written.
type HistoryReader interface {
	// InHistory reports whether commit is head or one of head's ancestors.
	// A forge that must walk the history looks back at most depth commits
	// and answers false past them; one whose server compares commits
	// answers exactly. A commit the server does not know is false, not an
	// error.
	InHistory(ctx context.Context, head, commit string, depth int) (bool, error)
}

// Signature is a Git identity with a time.
type Signature struct {
	Name  string
	Email string
	When  time.Time
}

// Signer signs a commit payload (the commit object without its signature),
// returning an armored signature.
type Signer interface {
	Sign(payload []byte) ([]byte, error)
}

// ErrSigningUnsupported is wrapped by the error of a forge whose API cannot
// carry a commit signature, when a CommitRequest has a Signer: it refuses the
// commit rather than write it unsigned.
var ErrSigningUnsupported = errors.New("this forge cannot carry a commit signature")

// SignatureCarrier is implemented by forges that write a CommitRequest's
// signature into the commit, where git verify-commit finds it.
type SignatureCarrier interface {
	// CarriesSignatures is false when the forge, as configured, would not
	// (GitHub in verified mode, where GitHub signs).
	CarriesSignatures() bool
}

// CarriesSignatures says whether f writes commit signatures. A forge that
// does not say is assumed not to, so signing fails closed.
func CarriesSignatures(f Forge) bool {
	carrier, ok := f.(SignatureCarrier)
	return ok && carrier.CarriesSignatures()
}

// CommitRequest is one commit on top of an expected head.
type CommitRequest struct {
	Branch string
	// ExpectedHead is the commit the branch must still point at. Empty means
	// the branch must not exist yet (a new branch, or an empty repository).
	ExpectedHead string
	// BaseHead, when ExpectedHead is empty, is the commit a new branch starts
	// from; empty starts an orphan history.
	BaseHead  string
	Message   string
	Author    Signature
	Committer Signature
	// Changes are the commit's file changes (gitfile.Change), each with
	// the blob its path holds at the commit's parent. A forge may keep a
	// change's Content after the commit without copying it (the git
	// forge's object store does, until ReleaseBlobs): the caller does not
	// modify it afterwards.
	Changes []gitfile.Change
	// Signer, when set, signs the commit.
	Signer Signer
	// MergeParent, when set (ExpectedHead must be set too), makes the
	// commit a merge: its first parent is ExpectedHead, its second
	// MergeParent, and its tree is MergeParent's tree with Changes applied
	// (each change's base blob is the one MergeParent's tree holds). The
	// branch still moves only if it points at ExpectedHead, which is an
	// ancestor of the new commit: a fast-forward, never a rewrite. It is how
	// pull-request mode starts its head branch afresh from a base that moved
	// (or took a merged pull request) without a force-push. A forge that
	// cannot make such a commit (MergeCommitter) refuses the request with
	// an error wrapping ErrMergeParentUnsupported before writing anything.
	// In a chain only reqs[0] may carry it.
	MergeParent string
}

// ErrMergeParentUnsupported is wrapped by the error of a forge asked for a
// commit with a MergeParent it cannot make (its API makes commits of one
// parent only).
var ErrMergeParentUnsupported = errors.New("this forge cannot make a commit with a second parent")

// MergeCommitter is implemented by forges that can make a commit with a
// second parent (CommitRequest.MergeParent).
type MergeCommitter interface {
	// CommitsMergeParent is false when the forge, as configured, cannot
	// (Gitea when its commits go through the contents API, not a push).
	CommitsMergeParent() bool
}

// CommitsMergeParent says whether f makes commits with a second parent. A
// forge that does not say is assumed not to.
func CommitsMergeParent(f Forge) bool {
	m, ok := f.(MergeCommitter)
	return ok && m.CommitsMergeParent()
}

// CommitResult is a commit that the branch now points at.
type CommitResult struct {
	// Commit is the id of the new commit.
	Commit string
	// Blobs maps each put path to its blob id, so the caller knows the new
	// tree without asking.
	Blobs map[string]string
}

// Writer commits changes with compare-and-swap on the branch head.
type Writer interface {
	// Commit applies req.Changes in one commit whose parent is
	// req.ExpectedHead and moves the branch to it only if the branch still
	// points at req.ExpectedHead. When it does not, the error is ErrConflict
	// and nothing on the branch changed.
	Commit(ctx context.Context, req CommitRequest) (CommitResult, error)
}

// ChainCommitter is implemented by forges that can commit several requests
// as a chain and move the branch once. A backlog of windows (interleaved
// authors, a forge outage) then reaches the branch in one compare-and-swap
// instead of one round of requests and one branch move per commit.
type ChainCommitter interface {
	// CommitChain commits reqs in order, reqs[0] as Commit would and each
	// later one on the commit before it (their ExpectedHead and BaseHead
	// are not read), and moves the branch to the last only if it still
	// points at reqs[0].ExpectedHead. Either every commit is on the branch
	// or none is: when it moved, the error is ErrConflict. results[i] is
	// reqs[i]'s.
	CommitChain(ctx context.Context, reqs []CommitRequest) (results []CommitResult, err error)
	// ChainLimit is the most requests one CommitChain takes. Where a chain
	// is one push (go-git) it bounds what one push carries; where the forge
	// is paid per commit (an HTTP API) it is what its request budget takes
	// at once, since a chain saves only the branch moves, not the commits.
	ChainLimit() int
}

// CommitOne commits req as a chain of one, for forges whose Commit is their
// CommitChain: one piece of code for both.
func CommitOne(ctx context.Context, c ChainCommitter, req CommitRequest) (CommitResult, error) {
	results, err := c.CommitChain(ctx, []CommitRequest{req})
	if err != nil {
		return CommitResult{}, err
	}
	return results[0], nil
}

// Forge is a repository the operator reads and writes.
type Forge interface {
	Reader
	Writer
	// CommitURL is the web URL of a commit, or "" when the forge has no web
	// UI.
	CommitURL(commit string) string
}

// Prober checks that the repository answers with the configured
// credentials, for the GitProvider's conditions. It returns an error of the
// shared vocabulary (ErrUnauthorized, ErrNotFound, ...).
type Prober interface {
	Probe(ctx context.Context) error
}

// Budget is a forge's request budget as its last response reported it.
type Budget struct {
	Limit     int
	Remaining int
	Reset     time.Time
}

// Budgeter reports the request budget of forges that meter requests
// (GitHub, GitLab), for metrics, GitProvider status, and for the worker to
// widen its commit window while the budget runs low.
type Budgeter interface {
	// Budget returns the last reported budget; ok is false before any
	// response carried one.
	Budget() (b Budget, ok bool)
}
