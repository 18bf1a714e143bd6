package forges

import "context"

// Pull-request mode (issue 25): the operator commits to a head branch with
// the same compare-and-swap as direct mode (Writer, never a force-push) and
// keeps one open pull request from it into the protected base branch. The
// interfaces below are what the branch executor asks of the forge for the
// pull request itself. They are optional: a forge without pull requests
// (plain Git, forges/gogit) implements neither, and the executor then only
// pushes the head branch and says so in the GitTarget's status.
//
// The interfaces are small and composed, one idea each: PullRequester
// (find, open, read, edit) is what every forge with pull requests has;
// BaseMerger (bring the base into the head, guarded by the head the caller
// read) only some forges offer, and only where the forge can refuse the
// update when the head moved.

// PullRequestState is where a pull request stands.
type PullRequestState string

const (
	// PullRequestOpen: open for review; the executor keeps committing to its
	// head.
	PullRequestOpen PullRequestState = "open"
	// PullRequestMerged: merged into the base. The next change starts a
	// fresh head from the base.
	PullRequestMerged PullRequestState = "merged"
	// PullRequestClosed: closed without a merge. The next change starts a
	// fresh head from the base as well.
	PullRequestClosed PullRequestState = "closed"
)

// PullRequest is a pull request (GitHub, Gitea) or merge request (GitLab)
// as the forge reports it.
type PullRequest struct {
	// Number is the pull request's number in the repository (GitHub's and
	// Gitea's number, GitLab's iid), what its URL and the API name it by.
	Number int64
	// URL is its web page.
	URL   string
	State PullRequestState
	// Head and Base are the branch names it merges from and into.
	Head, Base string
	// HeadCommit is the commit its head branch pointed at when the forge
	// answered (GitHub's head.sha, Gitea's head.sha, GitLab's sha).
	HeadCommit string
	Title      string
	Body       string
	// Mergeable is what the forge last computed of merging the head into
	// the base: MergeUnknown while it computes (GitHub's mergeable null),
	// MergeConflicting when the base moved and conflicts with the head.
	Mergeable MergeState
}

// MergeState is whether a pull request's head merges into its base.
type MergeState string

const (
	// MergeUnknown: the forge has not computed it (yet), or does not say.
	MergeUnknown MergeState = ""
	// MergeClean: the head merges into the base without conflicts.
	MergeClean MergeState = "clean"
	// MergeConflicting: the head and the base conflict; the pull request
	// cannot be merged until the head is updated.
	MergeConflicting MergeState = "conflicting"
)

// PullRequestOptions are the pull request to open, or the new title and
// body of an open one.
type PullRequestOptions struct {
	// Head is the branch with the changes; Base the branch it merges into.
	// Both are read by OpenPullRequest only.
	Head, Base string
	Title      string
	Body       string
}

// PullRequester is implemented by forges that have pull requests. Each
// method is one idempotent step the executor can repeat after a crash or a
// lost answer without making a second pull request.
//
// Errors are the shared vocabulary: ErrNotFound for a pull request (or a
// head or base branch) that does not exist, ErrRateLimited with the wait,
// ErrUnauthorized and ErrForbidden for credentials, ErrTransient for
// anything worth retrying as is.
type PullRequester interface {
	// FindPullRequest returns the OPEN pull request from head into base,
	// ErrNotFound when there is none. Merged and closed ones are not
	// returned: after a merge the next change starts a fresh head and a new
	// pull request.
	FindPullRequest(ctx context.Context, head, base string) (PullRequest, error)
	// OpenPullRequest opens a pull request from opts.Head into opts.Base.
	// When one is already open for that pair (another replica opened it, or
	// an earlier answer was lost) it returns that one, unchanged (its title
	// and body are what they were, not opts'), with created false: never a
	// second pull request. A head or base branch that does not exist is
	// ErrNotFound.
	OpenPullRequest(ctx context.Context, opts PullRequestOptions) (pr PullRequest, created bool, err error)
	// PullRequest reads pull request number, in any state: how the executor
	// learns that a human merged or closed it. ErrNotFound when there is no
	// such pull request.
	PullRequest(ctx context.Context, number int64) (PullRequest, error)
	// EditPullRequest sets the title and body (opts.Head and opts.Base are
	// not read) and returns the pull request as the forge now has it.
	EditPullRequest(ctx context.Context, number int64, opts PullRequestOptions) (PullRequest, error)
	// PullRequestURL is the web page of pull request number, built without
	// a request, for status and commit messages.
	PullRequestURL(number int64) string
}

// BaseMerger is implemented by forges that can bring the base's new
// commits into an open pull request's head on the server (a merge of the
// base into the head, never a rewrite of the head's history), refused when
// the head is no longer at the commit the caller read.
//
// The executor calls it only when the base moved and the pull request
// cannot merge as it is; a forge without it (GitLab, whose only server-side
// update is a rebase that rewrites the head's commits) is handled by
// rebuilding the head from the cluster's state on the new base with a
// compare-and-swap commit instead.
type BaseMerger interface {
	// MergeBaseIntoHead merges pull request number's base into its head if
	// the head still points at expectedHead.
	//   - nil: the forge accepted the update, or the head already has every
	//     commit of the base (nothing to do). The head's new commit is not
	//     returned: GitHub makes it in the background; read the pull request
	//     (or the branch) to learn it.
	//   - ErrConflict: the head moved since it was read, or the pull request
	//     is no longer open; nothing changed. Read it again.
	//   - ErrMergeConflict: the base does not merge into the head without
	//     conflicts; nothing changed. Rebuild the head on the new base.
	MergeBaseIntoHead(ctx context.Context, number int64, expectedHead string) error
}

// FileLinker is implemented by forges with a web UI that shows a file of a
// branch, for the links of a pull request's body.
type FileLinker interface {
	// FileURL is the web page of path (relative to the repository root) on
	// branch, built without a request.
	FileURL(branch, path string) string
}
