package github

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
)

// inlineContentMaxBytes: files up to this size that are valid UTF-8 go
// inline in the tree request; others are uploaded as blobs first. Inline
// content travels as a JSON string, which cannot carry arbitrary bytes, and
// the blob API is the documented way for large content (its base64
// encoding, https://docs.github.com/rest/git/blobs#create-a-blob).
const inlineContentMaxBytes = 1 << 20

// Commit applies req.Changes in one commit on req.ExpectedHead and moves
// the branch only as a fast forward, so a branch that moved since is
// ErrConflict and keeps what the other writer committed.
//
// Requests per commit: 3 on a head whose tree the client knows (its own
// last commit, or one it read with Tree), 4 otherwise; plus one per binary
// or large file. A new branch costs the same (POST git/refs instead of the
// PATCH). An empty repository: see bootstrap.
//
// The ref update is a fast-forward check, not an exact compare-and-swap:
// if the branch was force-moved back to an ancestor of ExpectedHead, the
// update still succeeds. Nothing on the branch is lost either way.
func (c *Client) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	op := "commit to " + req.Branch
	if err := validateRequest(req); err != nil {
		return forges.CommitResult{}, fmt.Errorf("%s: %w", op, err)
	}
	if req.Signer != nil && c.verified {
		return forges.CommitResult{}, fmt.Errorf("%s: %w: in verified mode GitHub signs the commit as the App",
			op, forges.ErrSigningUnsupported)
	}
	if req.ExpectedHead != "" {
		return c.commitOnHead(ctx, op, req)
	}
	if err := c.pace(op, c.contentRequests(req)); err != nil {
		return forges.CommitResult{}, err
	}
	switch {
	case req.BaseHead != "":
		return c.commitNewBranch(ctx, op, req, req.BaseHead)
	}
	return c.commitOrphan(ctx, op, req)
}

func validateRequest(req forges.CommitRequest) error {
	if req.Branch == "" {
		return errors.New("branch is empty")
	}
	for _, change := range req.Changes {
		if err := forges.ValidatePath(change.Path); err != nil {
			return fmt.Errorf("change %q: %w", change.Path, err)
		}
	}
	return nil
}

// CarriesSignatures is true in author mode, where a request's signature is
// sent as the commit's "signature" ("Create a commit",
// https://docs.github.com/rest/git/commits#create-a-commit), and false in
// verified mode, where GitHub signs.
func (c *Client) CarriesSignatures() bool { return !c.verified }

// commitOnHead commits on the branch's expected head and fast-forwards it.
// A commit whose ref update was held back earlier is not created again.
func (c *Client) commitOnHead(ctx context.Context, op string, req forges.CommitRequest) (forges.CommitResult, error) {
	key := commitKey(req, c.verified)
	result, ok := c.unpublished.take(key)
	if !ok {
		if err := c.pace(op, c.contentRequests(req)); err != nil {
			return forges.CommitResult{}, err
		}
		baseTree, err := c.treeOf(ctx, req.ExpectedHead)
		if err != nil {
			return forges.CommitResult{}, c.classify(op, err)
		}
		if result, err = c.writeCommit(ctx, op, req, baseTree, []string{req.ExpectedHead}); err != nil {
			return forges.CommitResult{}, err
		}
	} else if err := c.pace(op, 1); err != nil {
		c.unpublished.remember(key, result)
		return forges.CommitResult{}, err
	}
	err := c.fastForward(ctx, op, req.Branch, result.Commit)
	if errors.Is(err, forges.ErrRateLimited) || errors.Is(err, forges.ErrTransient) {
		c.unpublished.remember(key, result)
	}
	return result, err
}

// pace refuses, sending nothing, a commit whose n content-creating requests
// do not fit GitHub's secondary limits now.
func (c *Client) pace(op string, n int) error {
	wait := c.limits.content.roomFor(n)
	if wait <= 0 {
		return nil
	}
	return &forges.Error{Kind: forges.KindRateLimited, Op: op, RetryAfter: wait,
		Err: fmt.Errorf("%d content-creating requests would pass GitHub's secondary limit; nothing sent", n)}
}

// contentRequests is how many content-creating requests a commit sends: a
// blob per file that does not go inline, the tree, the commit and the ref.
func (c *Client) contentRequests(req forges.CommitRequest) int {
	n := 3
	for _, change := range req.Changes {
		if !change.Delete && !c.inline(change.Content) {
			n++
		}
	}
	return n
}

// fastForward is "Update a reference" with force false: "Leaving this out
// or setting it to false will make sure you're not overwriting work"
// (https://docs.github.com/rest/git/refs#update-a-reference). GitHub
// answers 422 "Update is not a fast forward" when the branch moved, and 422
// "Reference does not exist" when it was deleted: both are conflicts.
func (c *Client) fastForward(ctx context.Context, op, branch, commit string) error {
	_, _, err := c.api.Git.UpdateRef(ctx, c.owner, c.repo, "heads/"+branch,
		github.UpdateRef{SHA: commit, Force: new(false)})
	return c.classify(op, err, http.StatusUnprocessableEntity)
}

// commitNewBranch commits on base and creates the branch ("Create a
// reference", https://docs.github.com/rest/git/refs#create-a-reference);
// 422 "Reference already exists" means another writer created it first.
func (c *Client) commitNewBranch(ctx context.Context, op string, req forges.CommitRequest, base string) (forges.CommitResult, error) {
	baseTree, err := c.treeOf(ctx, base)
	if err != nil {
		return forges.CommitResult{}, c.classify(op, err)
	}
	result, err := c.writeCommit(ctx, op, req, baseTree, []string{base})
	if err != nil {
		return forges.CommitResult{}, err
	}
	return result, c.createBranch(ctx, op, req.Branch, result.Commit)
}

func (c *Client) createBranch(ctx context.Context, op, branch, commit string) error {
	_, _, err := c.api.Git.CreateRef(ctx, c.owner, c.repo, github.CreateRef{Ref: "refs/heads/" + branch, SHA: commit})
	return c.classify(op, err, http.StatusUnprocessableEntity)
}

// commitOrphan starts a history without parents: a new orphan branch, or
// the first commit of an empty repository, which the Git Database API
// refuses with 409 (bootstrap).
func (c *Client) commitOrphan(ctx context.Context, op string, req forges.CommitRequest) (forges.CommitResult, error) {
	result, err := c.writeCommit(ctx, op, req, "", nil)
	if errors.Is(err, forges.ErrEmptyRepository) {
		return c.bootstrap(ctx, op, req)
	}
	if err != nil {
		return forges.CommitResult{}, err
	}
	return result, c.createBranch(ctx, op, req.Branch, result.Commit)
}

// writeCommit creates the tree (on baseTree, "" for none) and the commit,
// and remembers the commit's tree for the next commit on it.
func (c *Client) writeCommit(ctx context.Context, op string, req forges.CommitRequest, baseTree string, parents []string) (forges.CommitResult, error) {
	entries, blobs, err := c.treeEntries(ctx, req.Changes)
	if err != nil {
		return forges.CommitResult{}, c.classify(op, err)
	}
	tree := baseTree
	if len(entries) > 0 || baseTree == "" {
		created, _, err := c.api.Git.CreateTree(ctx, c.owner, c.repo, baseTree, entries)
		if err != nil {
			// A deletion of a path that is gone is refused ("Returns an
			// error if you try to delete a file that does not exist",
			// https://docs.github.com/rest/git/trees#create-a-tree): a
			// file changed since the caller read it.
			return forges.CommitResult{}, c.classify(op, err, conflictStatusesOfTree(req.Changes)...)
		}
		tree = created.GetSHA()
	}
	commit, opts := c.commitObject(req, tree)
	for _, parent := range parents {
		commit.Parents = append(commit.Parents, &github.Commit{SHA: new(parent)})
	}
	created, _, err := c.api.Git.CreateCommit(ctx, c.owner, c.repo, commit, opts)
	if err != nil {
		return forges.CommitResult{}, c.classify(op, err)
	}
	c.commitTrees.put(created.GetSHA(), tree)
	return forges.CommitResult{Commit: created.GetSHA(), Blobs: blobs}, nil
}

func conflictStatusesOfTree(changes []forges.FileChange) []int {
	for _, change := range changes {
		if change.Delete {
			return []int{http.StatusUnprocessableEntity}
		}
	}
	return nil
}

// identity is an author or committer with its date ("Timestamps are in ISO
// 8601 format", https://docs.github.com/rest/git/commits#create-a-commit).
// commitObject is the commit to create: in author mode with the request's
// identities (and signature); in verified mode with none, so GitHub signs it
// as the App, and the author, when someone other than the committer, in a
// Co-authored-by trailer.
func (c *Client) commitObject(req forges.CommitRequest, tree string) (github.Commit, *github.CreateCommitOptions) {
	if c.verified {
		message := req.Message
		if req.Author.Email != req.Committer.Email || req.Author.Name != req.Committer.Name {
			message = forges.AppendTrailers(message, "Co-authored-by: "+req.Author.Name+" <"+req.Author.Email+">")
		}
		return github.Commit{Message: new(message), Tree: &github.Tree{SHA: new(tree)}}, nil
	}
	commit := github.Commit{
		Message: new(req.Message), Tree: &github.Tree{SHA: new(tree)},
		Author: identity(req.Author), Committer: identity(req.Committer),
	}
	if req.Signer != nil {
		return commit, &github.CreateCommitOptions{Signer: messageSigner{req.Signer}}
	}
	return commit, nil
}

func identity(sig forges.Signature) *github.CommitAuthor {
	return &github.CommitAuthor{Name: new(sig.Name), Email: new(sig.Email), Date: &github.Timestamp{Time: sig.When}}
}

// treeEntries turns changes into "Create a tree" entries: text inline
// ("content"), other content as a blob created first, deletions as sha
// null. It returns the blob id of every put path, computed locally for
// inline content (a blob's id is the SHA-1 of its content).
func (c *Client) treeEntries(ctx context.Context, changes []forges.FileChange) ([]*github.TreeEntry, map[string]string, error) {
	entries := make([]*github.TreeEntry, 0, len(changes))
	blobs := map[string]string{}
	for _, change := range changes {
		entry := &github.TreeEntry{Path: new(change.Path), Mode: new("100644"), Type: new("blob")}
		switch {
		case change.Delete:
			// go-github sends an entry with neither SHA nor Content as
			// "sha": null.
		case c.inline(change.Content):
			entry.Content = new(string(change.Content))
			blobs[change.Path] = plumbing.ComputeHash(plumbing.BlobObject, change.Content).String()
		default:
			blob, _, err := c.api.Git.CreateBlob(ctx, c.owner, c.repo, github.Blob{
				Content: base64.StdEncoding.EncodeToString(change.Content), Encoding: new("base64"),
			})
			if err != nil {
				return nil, nil, err
			}
			entry.SHA = blob.SHA
			blobs[change.Path] = blob.GetSHA()
		}
		entries = append(entries, entry)
	}
	return entries, blobs, nil
}

func (c *Client) inline(content []byte) bool {
	return len(content) <= c.textMaxBytes && utf8.Valid(content) && !strings.ContainsRune(string(content), 0)
}

// messageSigner adapts forges.Signer to go-github, which hands it the
// commit object without its signature: the payload Git verifies.
type messageSigner struct{ signer forges.Signer }

func (s messageSigner) Sign(w io.Writer, r io.Reader) error {
	payload, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	signature, err := s.signer.Sign(payload)
	if err != nil {
		return fmt.Errorf("signing the commit: %w", err)
	}
	_, err = w.Write(signature)
	return err
}

// escapePath escapes each segment of a repository path for a URL.
func escapePath(filePath string) string {
	segments := strings.Split(filePath, "/")
	for i, segment := range segments {
		segments[i] = url.PathEscape(segment)
	}
	return strings.Join(segments, "/")
}
