package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

const (
	// scratchBranchPrefix names the short-lived branches commits are made
	// on before the target branch is moved to them. Any branch with it is
	// this forge's; a stale one is deleted (scratch.go).
	scratchBranchPrefix = "gitops-reverser-cas-"
	// scratchCleanupTimeout bounds the deletion of a scratch branch, which
	// runs even when the caller's context is done, so that a cancelled
	// commit leaves no branch behind.
	scratchCleanupTimeout = 30 * time.Second
)

// Commit makes one commit of req.Changes on req.ExpectedHead and moves the
// branch to it only if the branch still points there (see the package
// documentation for the requests this takes): a chain of one.
func (c *Client) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	return forges.CommitOne(ctx, c, req)
}

// link is one commit of a chain: its request, and its changes with only
// the last change to each path.
type link struct {
	req     forges.CommitRequest
	changes []gitfile.Change
}

// apiChainLimit bounds a chain made through ChangeFiles: each commit is
// a request of about half a second (docs/benchmarks.md), with the branch
// unmoved until the last, so a long chain is a long window for another
// writer to move the branch and send the whole chain back. Fifty is about
// half a minute. Through a push the Pusher's limit holds.
const apiChainLimit = 50

// ChainLimit is the most commits CommitChain takes at once: the Pusher's
// while pushes go through, apiChainLimit otherwise.
func (c *Client) ChainLimit() int {
	if c.pushes() {
		return c.pusher.ChainLimit()
	}
	return apiChainLimit
}

// CommitChain makes a commit of each request on the one before and moves
// the branch once, to the last, only if it still points at
// reqs[0].ExpectedHead (forges.ChainCommitter). Through the Pusher that is
// one push. Through the API the commits are made on a scratch branch,
// one ChangeFiles each, planned on the changes' base blobs, and the branch
// moves with one compare-and-swap: N+2 requests for N commits. When the branch moved, or a file changed, the error is
// forges.ErrConflict and the branch is as the other writer left it.
// Within a request a later change to the same path wins over an earlier
// one; deleting a path that does not exist does nothing.
//
// In an empty repository the first commit lands on its own (see
// commitFirst) and the rest of the chain on it: if they fail, the branch
// holds the first commit alone, and the caller re-plans from there.
func (c *Client) CommitChain(ctx context.Context, reqs []forges.CommitRequest) ([]forges.CommitResult, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	first := reqs[0]
	op := "commit to " + first.Branch
	chain, err := chainOf(reqs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if c.pushes() {
		if results, ok, err := c.push(ctx, reqs); ok {
			if err == nil {
				c.sweepStaleScratch(ctx) // left by earlier commits through ChangeFiles
			}
			return results, err
		}
	}
	if first.MergeParent != "" {
		return nil, fmt.Errorf("%s: %w: Gitea's contents API (ChangeFiles) makes a commit of one parent, and the "+
			"server takes no git push from this client now", op, forges.ErrMergeParentUnsupported)
	}
	var commits []string
	switch {
	case first.ExpectedHead != "":
		commits, err = c.commitOnHead(ctx, op, first.ExpectedHead, chain)
	case first.BaseHead != "":
		commits, err = c.commitNewBranch(ctx, op, chain)
	default:
		commits, err = c.commitFirst(ctx, op, chain)
	}
	if err != nil {
		return nil, err
	}
	if first.ExpectedHead != "" || first.BaseHead != "" { // an empty repository has no branch to sweep
		c.sweepStaleScratch(ctx)
	}
	results := make([]forges.CommitResult, len(chain))
	for i, l := range chain {
		results[i] = forges.CommitResult{Commit: commits[i], Blobs: writtenBlobs(l.changes, commits[i])}
	}
	return results, nil
}

// CommitsMergeParent is true while commits go through the Pusher, which
// builds the commit itself (forges.MergeCommitter), and false on the API
// path: ChangeFiles ("Modify multiple files in a repository", POST
// contents, https://gitea.com/api/swagger#/repository/repoChangeFiles)
// commits on the head of branch (or new_branch from it) and takes no
// second parent. A server that refuses the Git protocol turns it false
// for pushRetryAfter; a request with a merge parent made then is refused
// before anything is written.
func (c *Client) CommitsMergeParent() bool {
	m, ok := c.pusher.(forges.MergeCommitter)
	return ok && c.pushes() && m.CommitsMergeParent()
}

// chainOf checks the requests and keeps the final change to each path of
// each. The heads of the requests after the first are not read.
func chainOf(reqs []forges.CommitRequest) ([]link, error) {
	chain := make([]link, len(reqs))
	for i, req := range reqs {
		if i > 0 {
			if req.MergeParent != "" {
				return nil, errors.New("only the first commit of a chain may have a merge parent")
			}
			req.ExpectedHead, req.BaseHead = "", ""
		}
		if err := checkCommitRequest(req); err != nil {
			return nil, err
		}
		changes, err := finalChanges(req.Changes)
		if err != nil {
			return nil, err
		}
		chain[i] = link{req: reqs[i], changes: changes}
	}
	return chain, nil
}

func checkCommitRequest(req forges.CommitRequest) error {
	if req.Branch == "" {
		return errors.New("empty branch name")
	}
	if req.Signer != nil {
		return fmt.Errorf("%w: Gitea's API takes no signature (Gitea signs API commits itself when the "+
			"instance has a signing key); use the git forge (forge.type: git) for commits signed with your key",
			forges.ErrSigningUnsupported)
	}
	if req.ExpectedHead != "" {
		if err := checkObjectID(req.ExpectedHead); err != nil {
			return fmt.Errorf("expected head: %w", err)
		}
	}
	if req.ExpectedHead == "" && req.BaseHead != "" {
		if err := checkObjectID(req.BaseHead); err != nil {
			return fmt.Errorf("base head: %w", err)
		}
	}
	return nil
}

// commitOnHead is the strict compare-and-swap: commit the chain on a
// scratch branch whose base is the target, the first commit on the
// expected head, then move the target from the expected head to the last
// commit.
func (c *Client) commitOnHead(ctx context.Context, op, expected string, chain []link) (commits []string, err error) {
	branch := chain[0].req.Branch
	scratch, err := c.scratchBranchName()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer func() { err = c.dropScratchBranch(ctx, op, scratch, err) }()

	// The first commit goes onto the new scratch branch from the target,
	// which Gitea bases on the target's head when the request arrives:
	// its parent tells whether that is still the expected head.
	commits, err = c.writeChain(ctx, op, chain, expected, func(i int) (string, string) {
		if i == 0 {
			return branch, scratch
		}
		return scratch, ""
	})
	if err != nil {
		return nil, c.conflictIfMoved(ctx, op, branch, expected, err)
	}
	move := updateBranchRequest{NewCommitID: commits[len(commits)-1], OldCommitID: expected}
	err = c.call(ctx, http.MethodPut, c.repoPath("/branches/"+escapeRef(branch)), nil, move, nil)
	if statusOf(err) == http.StatusNotFound {
		return nil, asConflict(op, err, branch+" was deleted")
	}
	if err != nil {
		return nil, classify(op, err)
	}
	return commits, nil
}

// commitNewBranch creates the target branch with the chain on its
// BaseHead. The commits are made on a scratch branch created at BaseHead,
// the last pushed to the target as a new branch, which Gitea refuses with
// 422 "branch already exists" when the target appeared meanwhile.
func (c *Client) commitNewBranch(ctx context.Context, op string, chain []link) (commits []string, err error) {
	first := chain[0].req
	scratch, err := c.scratchBranchName()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer func() { err = c.dropScratchBranch(ctx, op, scratch, err) }()

	start := createBranchRequest{NewBranchName: scratch, OldRefName: first.BaseHead}
	if err := c.call(ctx, http.MethodPost, c.repoPath("/branches"), nil, start, nil); err != nil {
		return nil, classify(op+": create scratch branch", err)
	}
	// Once the last ChangeFiles answers, the target exists.
	commits, err = c.writeChain(ctx, op, chain, first.BaseHead, func(i int) (string, string) {
		if i == len(chain)-1 {
			return scratch, first.Branch
		}
		return scratch, ""
	})
	if err != nil {
		return nil, classify(op, err)
	}
	return commits, nil
}

// writeChain makes the chain's commits with one ChangeFiles each: link i
// on top of branch from, onto branch onto (a branch that must not exist
// yet, or "" for from itself), as route(i) says; the first on parent.
// Each commit is planned on its changes' base blobs. Each commit's parent
// is checked to be the one before: Gitea bases a commit on the head of
// from when the request arrives.
func (c *Client) writeChain(ctx context.Context, op string, chain []link, parent string,
	route func(i int) (from, onto string)) ([]string, error) {
	commits := make([]string, 0, len(chain))
	for i, l := range chain {
		from, onto := route(i)
		created, err := c.changeFiles(ctx, l.req, from, onto, planOperations(l.changes))
		if err != nil {
			return nil, err
		}
		if !hasParent(created, parent) {
			return nil, forges.Errorf(forges.KindConflict, op, fmt.Errorf("%s moved: gitea based the commit on %s, not on the expected %s",
				from, parentsOf(created), parent))
		}
		parent = created.Commit.SHA
		commits = append(commits, parent)
	}
	return commits, nil
}

// commitFirst makes a root commit on a branch that must not exist, and
// the rest of the chain on it. Gitea makes one only in an empty
// repository: ChangeFiles accepts a base branch that does not exist only
// while the repository is empty. The base is a fresh name, never the
// target itself: with branch = target, a target created meanwhile would
// become the base and the commit would land on top of it instead of
// failing. The first commit cannot go to a scratch branch: the first
// branch of an empty repository may become its default.
func (c *Client) commitFirst(ctx context.Context, op string, chain []link) ([]string, error) {
	req := chain[0].req
	missingBase, err := c.scratchBranchName()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	created, err := c.changeFiles(ctx, req, missingBase, req.Branch, planOperations(chain[0].changes))
	if statusOf(err) == http.StatusNotFound {
		return nil, c.explainNoRootCommit(ctx, op, req.Branch, err)
	}
	if err != nil {
		return nil, classify(op, err)
	}
	commits := []string{created.Commit.SHA}
	if len(chain) == 1 {
		return commits, nil
	}
	rest, err := c.commitOnHead(ctx, op, created.Commit.SHA, chain[1:])
	if err != nil {
		return nil, err
	}
	return append(commits, rest...), nil
}

// explainNoRootCommit says why ChangeFiles refused a first commit with
// 404: the repository is missing; or it has commits, and either the
// branch exists by now (a concurrent first commit) or Gitea was asked for
// an orphan branch, which it cannot make.
func (c *Client) explainNoRootCommit(ctx context.Context, op, branch string, refusal error) error {
	var repo repositoryResponse
	if err := c.call(ctx, http.MethodGet, c.repoPath(""), nil, nil, &repo); err != nil {
		return classify(op, err)
	}
	if repo.Empty {
		return classify(op, refusal)
	}
	_, err := c.Head(ctx, branch)
	switch {
	case err == nil:
		return asConflict(op, refusal, branch+" exists now")
	case errors.Is(err, forges.ErrNotFound):
		return fmt.Errorf("%s: the repository has commits and gitea cannot start an orphan branch in it; "+
			"give the commit a base head: %w", op, refusal)
	}
	return err
}

// changeFiles commits operations with ChangeFiles on top of branch base,
// onto newBranch (which must not exist yet).
func (c *Client) changeFiles(ctx context.Context, req forges.CommitRequest, base, newBranch string, operations []fileOperation) (*changeFilesResponse, error) {
	body := changeFilesRequest{
		Branch:    base,
		NewBranch: newBranch,
		Message:   req.Message,
		Author:    identity{Name: req.Author.Name, Email: req.Author.Email},
		Committer: identity{Name: req.Committer.Name, Email: req.Committer.Email},
		Dates:     commitDates{Author: req.Author.When, Committer: req.Committer.When},
		Files:     operations,
	}
	var created changeFilesResponse
	if err := c.call(ctx, http.MethodPost, c.repoPath("/contents"), nil, body, &created); err != nil {
		return nil, err
	}
	if created.Commit == nil || created.Commit.SHA == "" {
		return nil, errors.New("gitea answered ChangeFiles without the commit it made")
	}
	return &created, nil
}

// conflictIfMoved classifies err, and makes it a conflict when the branch
// no longer points at expected. A refusal that names nothing that moved (a
// 404 for a deleted branch, an expected head that is gone, a new file in
// the way of a new directory) may still be a concurrent writer's doing;
// one read of the head tells. Errors that already say what they are pass
// through.
func (c *Client) conflictIfMoved(ctx context.Context, op, branch, expected string, err error) error {
	classified := classify(op, err)
	status := statusOf(err)
	if forges.KindOf(classified) == forges.KindConflict || status < 400 || status > 499 ||
		status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests {
		return classified
	}
	head, headErr := c.Head(ctx, branch)
	switch {
	case headErr == nil && head == expected:
		return classified
	case headErr == nil:
		return asConflict(op, err, fmt.Sprintf("%s moved from %s to %s", branch, expected, head))
	case errors.Is(headErr, forges.ErrNotFound) && !c.repositoryVisible(ctx):
		// A repository the token cannot see answers 404 to everything:
		// not found, not a branch another writer deleted.
		return classified
	case errors.Is(headErr, forges.ErrNotFound), errors.Is(headErr, forges.ErrEmptyRepository):
		return asConflict(op, err, branch+" no longer exists")
	}
	return classified
}

// repositoryVisible reports whether the repository answers to the token;
// a failed read is taken as visible, so a refusal stays a conflict.
func (c *Client) repositoryVisible(ctx context.Context) bool {
	err := c.call(ctx, http.MethodGet, c.repoPath(""), nil, nil, &repositoryResponse{})
	return statusOf(err) != http.StatusNotFound
}

// dropScratchBranch deletes the scratch branch after a commit, whatever
// happened (ChangeFiles may have created it even when its answer was
// lost). A failed deletion is added to a failed commit's error; a
// successful commit stays successful and the branch is left behind.
func (c *Client) dropScratchBranch(ctx context.Context, op, name string, commitErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scratchCleanupTimeout)
	defer cancel()
	err := c.call(ctx, http.MethodDelete, c.repoPath("/branches/"+escapeRef(name)), nil, nil, nil)
	if err == nil || statusOf(err) == http.StatusNotFound || commitErr == nil {
		return commitErr
	}
	return errors.Join(commitErr, fmt.Errorf("%s: deleting scratch branch %s: %w", op, name, err))
}

func parentsOf(created *changeFilesResponse) string {
	if created.Commit == nil || len(created.Commit.Parents) == 0 {
		return "no parent"
	}
	shas := make([]string, 0, len(created.Commit.Parents))
	for _, parent := range created.Commit.Parents {
		shas = append(shas, parent.SHA)
	}
	return strings.Join(shas, ", ")
}
