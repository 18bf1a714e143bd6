package gitlab

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// Commit makes one commit through POST /projects/:id/repository/commits
// (https://docs.gitlab.com/api/commits/#create-a-commit-with-multiple-files-and-actions):
//   - on an existing branch (ExpectedHead set): after checking the branch
//     still points at ExpectedHead, with last_commit_id = ExpectedHead on
//     every update and delete, so GitLab refuses a file changed since;
//   - a new branch from BaseHead: start_sha = BaseHead, which GitLab
//     refuses when the branch already exists;
//   - the first commit of an empty repository (neither set): branch alone,
//     which GitLab accepts only while the repository has no commits.
//
// A refusal is forges.ErrConflict and changes nothing. A commit that
// landed on a head another writer moved meanwhile is forges.ErrConflict
// wrapping *MovedHeadError: see the package documentation.
//
// The client commits one request at a time and does not implement
// forges.ChainCommitter, because GitLab's API has no guarded move of a
// branch to a commit made elsewhere. The commits API moves the branch it
// commits into, once per commit; start_branch and start_sha only start a
// branch that does not exist yet, and force replaces the branch
// unconditionally
// (https://docs.gitlab.com/api/commits/#create-a-commit-with-multiple-files-and-actions).
// So a chain could be built on a scratch branch, but nothing moves the
// target to it only if the target is still at the expected head: the
// branches API creates and deletes branches and cannot update one
// (https://docs.gitlab.com/api/branches/), and merging a merge request
// from the scratch branch guards only the source: its sha "must match the
// HEAD of the source branch"
// (https://docs.gitlab.com/api/merge_requests/#merge-a-merge-request).
// Whether such a merge fast-forwards or adds a merge commit on top of
// another writer's change depends on the project's merge method, which is
// the project's setting, not this client's. A backlog on GitLab is
// therefore committed as one commit per request; the git forge
// (forge.type: git) on the repository's URL pushes a chain at once.
func (c *Client) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	op := "commit to " + req.Branch
	switch {
	case req.Branch == "":
		return forges.CommitResult{}, fmt.Errorf("%s: no branch given", op)
	case req.Signer != nil:
		return forges.CommitResult{}, fmt.Errorf("%s: %w: GitLab's commits API takes no signature; "+
			"use the git forge (forge.type: git) for signed commits", op, forges.ErrSigningUnsupported)
	case req.MergeParent != "":
		return forges.CommitResult{}, fmt.Errorf("%s: %w: GitLab's commits API makes a commit of one parent, the "+
			"branch's head (or start_sha); use the git forge (forge.type: git) on the repository's URL for merge commits",
			op, forges.ErrMergeParentUnsupported)
	case req.ExpectedHead != "":
		return c.commitOnBranch(ctx, op, req)
	case req.BaseHead != "":
		return c.commitNewBranch(ctx, op, req)
	}
	return c.commitFirst(ctx, op, req)
}

// CommitsMergeParent is false (forges.MergeCommitter): "Create a commit
// with multiple files and actions" makes one commit on the head of branch,
// or of start_branch or start_sha for a new branch
// (https://docs.gitlab.com/api/commits/#create-a-commit-with-multiple-files-and-actions):
// it takes no second parent, so a request with a merge parent is refused
// before anything is sent.
func (c *Client) CommitsMergeParent() bool { return false }

// commitOnBranch commits on top of ExpectedHead. GitLab has no head
// compare-and-swap, so the head is read right before the commit: a moved
// head is refused here, without writing anything.
func (c *Client) commitOnBranch(ctx context.Context, op string, req forges.CommitRequest) (forges.CommitResult, error) {
	head, err := c.branchHead(ctx, op, req.Branch)
	if forges.KindOf(err) == forges.KindNotFound {
		return forges.CommitResult{}, forges.Errorf(forges.KindConflict, op,
			fmt.Errorf("branch %s no longer exists; expected it at %s: %w", req.Branch, req.ExpectedHead, err))
	}
	if err != nil {
		return forges.CommitResult{}, err
	}
	if head != req.ExpectedHead {
		return forges.CommitResult{}, forges.Errorf(forges.KindConflict, op,
			fmt.Errorf("branch %s is at %s, not at the expected %s", req.Branch, head, req.ExpectedHead))
	}
	actions := plan(req.Changes, req.ExpectedHead)
	if len(actions) == 0 {
		// Every change was the deletion of an absent file: the branch is
		// already as asked, and GitLab cannot make an empty commit.
		return forges.CommitResult{Commit: head, Blobs: map[string]string{}}, nil
	}
	return c.create(ctx, op, req, actions, req.ExpectedHead, nil)
}

// commitNewBranch starts req.Branch at BaseHead with the changes. GitLab
// refuses start_sha for a branch that exists ("A branch called ... already
// exists"), which is the compare-and-swap for "the branch must not exist".
func (c *Client) commitNewBranch(ctx context.Context, op string, req forges.CommitRequest) (forges.CommitResult, error) {
	actions := plan(req.Changes, "")
	if len(actions) == 0 {
		return forges.CommitResult{}, fmt.Errorf("%s: no changes to start the branch with; GitLab cannot make an empty commit", op)
	}
	return c.create(ctx, op, req, actions, req.BaseHead, gl.Ptr(req.BaseHead))
}

// commitFirst makes the first commit of an empty repository: a commit
// with only branch set, which GitLab bases on nothing while the project
// has no commits. The branch must not exist; GitLab would otherwise commit
// on top of it, so that is checked first.
func (c *Client) commitFirst(ctx context.Context, op string, req forges.CommitRequest) (forges.CommitResult, error) {
	head, err := c.branchHead(ctx, op, req.Branch)
	switch {
	case err == nil:
		return forges.CommitResult{}, forges.Errorf(forges.KindConflict, op,
			fmt.Errorf("branch %s exists (at %s); expected it not to", req.Branch, head))
	case forges.KindOf(err) != forges.KindNotFound:
		return forges.CommitResult{}, err
	}
	var actions []*gl.CommitActionOptions
	for _, change := range req.Changes {
		if !change.Delete {
			actions = append(actions, putAction(gl.FileCreate, change, ""))
		}
	}
	if len(actions) == 0 {
		return forges.CommitResult{}, fmt.Errorf("%s: no files to put in the empty repository", op)
	}
	return c.create(ctx, op, req, actions, "", nil)
}

// plan turns changes into actions from their base blobs, so no tree is
// read to plan a commit: a put of a path with a base blob is an update and
// a create otherwise (which GitLab refuses if the path exists by then), a
// delete of a path without one is dropped. lastCommitID, when set, guards
// every update and delete: GitLab refuses one whose file changed since,
// so a stale base blob never overwrites another writer's change.
func plan(changes []gitfile.Change, lastCommitID string) []*gl.CommitActionOptions {
	var actions []*gl.CommitActionOptions
	for _, change := range changes {
		exists := change.BaseBlob != ""
		switch {
		case change.Delete && exists:
			actions = append(actions, &gl.CommitActionOptions{
				Action: gl.Ptr(gl.FileDelete), FilePath: gl.Ptr(change.Path), LastCommitID: optional(lastCommitID),
			})
		case change.Delete:
		case exists:
			actions = append(actions, putAction(gl.FileUpdate, change, lastCommitID))
		default:
			actions = append(actions, putAction(gl.FileCreate, change, ""))
		}
	}
	return actions
}

// putAction writes content base64-encoded, so any bytes survive the JSON
// body unchanged.
func putAction(action gl.FileActionValue, change gitfile.Change, lastCommitID string) *gl.CommitActionOptions {
	return &gl.CommitActionOptions{
		Action:       gl.Ptr(action),
		FilePath:     gl.Ptr(change.Path),
		Content:      gl.Ptr(base64.StdEncoding.EncodeToString(change.Content)),
		Encoding:     gl.Ptr("base64"),
		LastCommitID: optional(lastCommitID),
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// create sends the commit and checks where it landed: its only parent
// must be base (none for the first commit).
func (c *Client) create(ctx context.Context, op string, req forges.CommitRequest, actions []*gl.CommitActionOptions,
	base string, startSHA *string) (forges.CommitResult, error) {
	opt := &gl.CreateCommitOptions{
		Branch:        gl.Ptr(req.Branch),
		CommitMessage: gl.Ptr(req.Message),
		StartSHA:      startSHA,
		Actions:       actions,
		AuthorName:    optional(req.Author.Name),
		AuthorEmail:   optional(req.Author.Email),
		Stats:         gl.Ptr(false),
	}
	created, resp, err := c.api.Commits.CreateCommit(c.project, opt, gl.WithContext(ctx))
	if err != nil {
		return forges.CommitResult{}, classify(op, resp, err)
	}
	if created == nil || created.ID == "" {
		return forges.CommitResult{}, forges.Errorf(forges.KindTransient, op, errors.New("GitLab answered without a commit id"))
	}
	want := []string{base}
	if base == "" {
		want = nil
	}
	if !slices.Equal(created.ParentIDs, want) {
		return forges.CommitResult{}, forges.Errorf(forges.KindConflict, op,
			&MovedHeadError{Commit: created.ID, Parents: created.ParentIDs, Expected: base})
	}
	return forges.CommitResult{Commit: created.ID, Blobs: blobIDs(req.Changes)}, nil
}

// blobIDs are the Git ids of the put contents, which GitLab does not
// return: Git's SHA-1 of "blob <size>\x00<content>".
func blobIDs(changes []gitfile.Change) map[string]string {
	blobs := map[string]string{}
	for _, change := range changes {
		if !change.Delete {
			blobs[change.Path] = plumbing.ComputeHash(plumbing.BlobObject, change.Content).String()
		}
	}
	return blobs
}
