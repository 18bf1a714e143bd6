package github

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"

	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// bootstrapChain makes the first commits of an empty repository. The Git
// Database API answers 409 there; "For an empty repository, you can use the
// Create or update file contents endpoint to create content and initialize
// the repository so you can use the Git Database API"
// (https://docs.github.com/rest/guides/using-the-rest-api-to-interact-with-your-git-database).
//
// So the first put file of the chain's first request (the smallest: the
// contents API is the narrower one) goes in through "Create or update file
// contents"
// (https://docs.github.com/rest/repos/contents#create-or-update-file-contents),
// with the request's message, author, committer and dates, and every other
// change of that request follows in a second commit on top through the Git
// Database API, and the rest of the chain on that, with one ref update for
// them all. The contents API takes no signature, so a signed first request
// is refused (ErrSigningUnsupported) rather than start the history with an
// unsigned commit: someone has to make the repository's first commit.
//
// Requests for one request: the refused attempt (1, the 409), the contents
// PUT (1), and for the rest of the changes tree, commit and ref update (3):
// 2 for a single file, 5 otherwise. Each later request of a chain adds a
// tree and a commit.
//
// Another writer initializing the repository at the same time is not
// overwritten: the contents API commits on top of whatever the branch holds
// and refuses to replace an existing file without its sha (422, or 409 for
// a stale sha), and the chain on top only fast-forwards. The contents PUT
// moves the branch by itself, so a chain that fails after it leaves the
// branch holding the first file alone, unlike a chain on a branch that
// exists; the caller re-plans from that head like after any conflict.
func (c *Client) bootstrapChain(ctx context.Context, op string, reqs []forges.CommitRequest) ([]forges.CommitResult, error) {
	boot, rest, err := c.bootstrap(ctx, op, reqs[0])
	if err != nil {
		return nil, err
	}
	onTop := reqs[1:]
	if len(rest.Changes) > 0 {
		onTop = append([]forges.CommitRequest{rest}, onTop...)
	}
	if len(onTop) == 0 {
		return []forges.CommitResult{boot}, nil
	}
	results, err := c.writeChain(ctx, op, onTop, boot.Commit)
	if err == nil {
		err = c.fastForward(ctx, op, reqs[0].Branch, results[len(results)-1].Commit)
	}
	if err != nil {
		return nil, err
	}
	if len(rest.Changes) == 0 {
		return append([]forges.CommitResult{boot}, results...), nil
	}
	// The first request's commit is the one on top of the contents PUT,
	// and its tree holds the file the PUT put as well.
	maps.Copy(results[0].Blobs, boot.Blobs)
	return results, nil
}

// bootstrap puts req's smallest file through the contents API and returns
// that commit and the rest of req's changes, still to commit on top of it.
func (c *Client) bootstrap(ctx context.Context, op string, req forges.CommitRequest) (forges.CommitResult, forges.CommitRequest, error) {
	if req.Signer != nil {
		return forges.CommitResult{}, forges.CommitRequest{}, fmt.Errorf("%s: %w: the repository is empty, and GitHub's only way to make "+
			"its first commit, the contents API, takes no signature; push a first commit (a README) to the repository",
			op, forges.ErrSigningUnsupported)
	}
	first, ok := smallestPut(req.Changes)
	if !ok {
		return forges.CommitResult{}, forges.CommitRequest{}, forges.Errorf(forges.KindEmptyRepository, op,
			errors.New("the repository is empty and the commit puts no file to start it with"))
	}
	created, _, err := c.api.Repositories.CreateFile(ctx, c.owner, c.repo, forges.EscapePathSegments(req.Changes[first].Path),
		&github.RepositoryContentFileOptions{
			Message: new(req.Message), Content: req.Changes[first].Content, Branch: new(req.Branch),
			Author: identity(req.Author), Committer: identity(req.Committer),
		})
	if err != nil {
		return forges.CommitResult{}, forges.CommitRequest{}, c.classify(op, err,
			http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity)
	}
	bootCommit := created.Commit.GetSHA()
	c.commitTrees.put(bootCommit, created.Commit.GetTree().GetSHA())
	boot := forges.CommitResult{Commit: bootCommit, Blobs: map[string]string{req.Changes[first].Path: created.GetContent().GetSHA()}}
	rest := req
	rest.Changes = append(append([]gitfile.Change(nil), req.Changes[:first]...), req.Changes[first+1:]...)
	return boot, rest, nil
}

// smallestPut is the index of the smallest file the changes put.
func smallestPut(changes []gitfile.Change) (int, bool) {
	best := -1
	for i, change := range changes {
		if !change.Delete && (best < 0 || len(change.Content) < len(changes[best].Content)) {
			best = i
		}
	}
	return best, best >= 0
}
