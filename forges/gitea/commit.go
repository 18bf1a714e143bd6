package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
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
// documentation for the requests this takes). When the branch moved, or a
// file changed, the error is forges.ErrConflict and the branch is as the
// other writer left it. A later change to the same path in req.Changes
// wins over an earlier one; deleting a path that does not exist does
// nothing.
func (c *Client) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	op := "commit to " + req.Branch
	if err := checkCommitRequest(req); err != nil {
		return forges.CommitResult{}, fmt.Errorf("%s: %w", op, err)
	}
	changes, err := finalChanges(req.Changes)
	if err != nil {
		return forges.CommitResult{}, fmt.Errorf("%s: %w", op, err)
	}
	if c.pushes() {
		if res, ok, err := c.push(ctx, req); ok {
			if err == nil {
				c.sweepStaleScratch(ctx) // left by earlier commits through ChangeFiles
			}
			return res, err
		}
	}
	var commit string
	switch {
	case req.ExpectedHead != "":
		commit, err = c.commitOnHead(ctx, op, req, changes)
	case req.BaseHead != "":
		commit, err = c.commitNewBranch(ctx, op, req, changes)
	default:
		commit, err = c.commitFirst(ctx, op, req, changes)
	}
	if err != nil {
		return forges.CommitResult{}, err
	}
	if req.ExpectedHead != "" || req.BaseHead != "" { // an empty repository has no branch to sweep
		c.sweepStaleScratch(ctx)
	}
	return forges.CommitResult{Commit: commit, Blobs: writtenBlobs(changes, commit)}, nil
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

// commitOnHead is the strict compare-and-swap: commit on a scratch branch
// whose base is the target, check that the commit's parent is the expected
// head, then move the target from the expected head to the commit.
func (c *Client) commitOnHead(ctx context.Context, op string, req forges.CommitRequest, changes []forges.FileChange) (commit string, err error) {
	base, err := c.baseFiles(ctx, req.ExpectedHead, changes)
	if err != nil {
		return "", c.conflictIfMoved(ctx, op, req.Branch, req.ExpectedHead, err)
	}
	scratch, err := c.scratchBranchName()
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	defer func() { err = c.dropScratchBranch(ctx, op, scratch, err) }()

	created, err := c.changeFiles(ctx, req, req.Branch, scratch, planOperations(changes, base))
	if err != nil {
		return "", c.conflictIfMoved(ctx, op, req.Branch, req.ExpectedHead, err)
	}
	if !hasParent(created, req.ExpectedHead) {
		return "", forges.Errorf(forges.KindConflict, op, fmt.Errorf("%s moved: gitea based the commit on %s, not on the expected %s",
			req.Branch, parentsOf(created), req.ExpectedHead))
	}
	move := updateBranchRequest{NewCommitID: created.Commit.SHA, OldCommitID: req.ExpectedHead}
	err = c.call(ctx, http.MethodPut, c.repoPath("/branches/"+escapeRef(req.Branch)), nil, move, nil)
	if statusOf(err) == http.StatusNotFound {
		return "", asConflict(op, err, req.Branch+" was deleted")
	}
	if err != nil {
		return "", classify(op, err)
	}
	return created.Commit.SHA, nil
}

// commitNewBranch creates req.Branch with one commit on req.BaseHead. The
// commit is made on a scratch branch created at BaseHead and pushed to the
// target as a new branch, which Gitea refuses with 422 "branch already
// exists" when the target appeared meanwhile.
func (c *Client) commitNewBranch(ctx context.Context, op string, req forges.CommitRequest, changes []forges.FileChange) (commit string, err error) {
	base, err := c.baseFiles(ctx, req.BaseHead, changes)
	if err != nil {
		return "", classify(op, err)
	}
	scratch, err := c.scratchBranchName()
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	defer func() { err = c.dropScratchBranch(ctx, op, scratch, err) }()

	start := createBranchRequest{NewBranchName: scratch, OldRefName: req.BaseHead}
	if err := c.call(ctx, http.MethodPost, c.repoPath("/branches"), nil, start, nil); err != nil {
		return "", classify(op+": create scratch branch", err)
	}
	// The scratch branch is ours and starts at BaseHead, so the commit's
	// parent is BaseHead; once ChangeFiles answers, the target exists.
	created, err := c.changeFiles(ctx, req, scratch, req.Branch, planOperations(changes, base))
	if err != nil {
		return "", classify(op, err)
	}
	return created.Commit.SHA, nil
}

// commitFirst makes a root commit on a branch that must not exist. Gitea
// makes one only in an empty repository: ChangeFiles accepts a base branch
// that does not exist only while the repository is empty. The base is a
// fresh name, never the target itself: with branch = target, a target
// created meanwhile would become the base and the commit would land on top
// of it instead of failing.
func (c *Client) commitFirst(ctx context.Context, op string, req forges.CommitRequest, changes []forges.FileChange) (string, error) {
	missingBase, err := c.scratchBranchName()
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	created, err := c.changeFiles(ctx, req, missingBase, req.Branch, planOperations(changes, nil))
	if statusOf(err) == http.StatusNotFound {
		return "", c.explainNoRootCommit(ctx, op, req.Branch, err)
	}
	if err != nil {
		return "", classify(op, err)
	}
	return created.Commit.SHA, nil
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

// baseFiles reads the files of commit that changes can touch, by path;
// no changes need no read (the commit is then empty, as Gitea allows).
func (c *Client) baseFiles(ctx context.Context, commit string, changes []forges.FileChange) (map[string]forges.TreeEntry, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	entries, err := c.Tree(ctx, commit, commonDirectory(changes))
	if err != nil {
		return nil, err
	}
	return filesByPath(entries), nil
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
	case errors.Is(headErr, forges.ErrNotFound), errors.Is(headErr, forges.ErrEmptyRepository):
		return asConflict(op, err, branch+" no longer exists")
	}
	return classified
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
