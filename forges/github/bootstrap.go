package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
)

// bootstrap makes the first commit of an empty repository. The Git
// Database API answers 409 there; "For an empty repository, you can use the
// Create or update file contents endpoint to create content and initialize
// the repository so you can use the Git Database API"
// (https://docs.github.com/rest/guides/using-the-rest-api-to-interact-with-your-git-database).
//
// So the first put file (the smallest: the contents API is the narrower
// one) goes in through "Create or update file contents"
// (https://docs.github.com/rest/repos/contents#create-or-update-file-contents),
// with the request's message, author, committer and dates, and every other
// change follows in a second commit on top through the Git Database API.
// The contents API takes no signature, so a signed request is refused
// (ErrSigningUnsupported) rather than start the history with an unsigned
// commit: someone has to make the repository's first commit.
//
// Requests: the refused attempt (1, the 409), the contents PUT (1), and for
// the rest of the changes tree, commit and ref update (3): 2 for a single
// file, 5 otherwise.
//
// Another writer initializing the repository at the same time is not
// overwritten: the contents API commits on top of whatever the branch holds
// and refuses to replace an existing file without its sha (422, or 409 for
// a stale sha), and the second commit only fast-forwards. When the second
// commit fails, the branch holds the first file alone; the caller re-plans
// from that head like after any conflict.
func (c *Client) bootstrap(ctx context.Context, op string, req forges.CommitRequest) (forges.CommitResult, error) {
	if req.Signer != nil {
		return forges.CommitResult{}, fmt.Errorf("%s: %w: the repository is empty, and GitHub's only way to make "+
			"its first commit, the contents API, takes no signature; push a first commit (a README) to the repository",
			op, forges.ErrSigningUnsupported)
	}
	first, ok := smallestPut(req.Changes)
	if !ok {
		return forges.CommitResult{}, forges.Errorf(forges.KindEmptyRepository, op,
			errors.New("the repository is empty and the commit puts no file to start it with"))
	}
	created, _, err := c.api.Repositories.CreateFile(ctx, c.owner, c.repo, escapePath(req.Changes[first].Path),
		&github.RepositoryContentFileOptions{
			Message: new(req.Message), Content: req.Changes[first].Content, Branch: new(req.Branch),
			Author: identity(req.Author), Committer: identity(req.Committer),
		})
	if err != nil {
		return forges.CommitResult{}, c.classify(op, err,
			http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity)
	}
	bootCommit, bootTree := created.Commit.GetSHA(), created.Commit.GetTree().GetSHA()
	c.commitTrees.put(bootCommit, bootTree)
	result := forges.CommitResult{Commit: bootCommit, Blobs: map[string]string{req.Changes[first].Path: created.GetContent().GetSHA()}}
	rest := req
	rest.Changes = append(append([]forges.FileChange(nil), req.Changes[:first]...), req.Changes[first+1:]...)
	if len(rest.Changes) == 0 {
		return result, nil
	}
	onTop, err := c.writeCommit(ctx, op, rest, bootTree, []string{bootCommit})
	if err != nil {
		return forges.CommitResult{}, err
	}
	if err := c.fastForward(ctx, op, req.Branch, onTop.Commit); err != nil {
		return forges.CommitResult{}, err
	}
	for path, blob := range onTop.Blobs {
		result.Blobs[path] = blob
	}
	result.Commit = onTop.Commit
	return result, nil
}

// smallestPut is the index of the smallest file the changes put.
func smallestPut(changes []forges.FileChange) (int, bool) {
	best := -1
	for i, change := range changes {
		if !change.Delete && (best < 0 || len(change.Content) < len(changes[best].Content)) {
			best = i
		}
	}
	return best, best >= 0
}
