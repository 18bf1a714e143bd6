package github

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// inlineContentMaxBytes: files up to this size that are valid UTF-8 go
// inline in the tree request; others are uploaded as blobs first. Inline
// content travels as a JSON string, which cannot carry arbitrary bytes, and
// the blob API is the documented way for large content (its base64
// encoding, https://docs.github.com/rest/git/blobs#create-a-blob).
const inlineContentMaxBytes = 1 << 20

// Commit applies req.Changes in one commit on req.ExpectedHead and moves
// the branch only as a fast forward, so a branch that moved since is
// ErrConflict and keeps what the other writer committed: a chain of one.
//
// Each change's base blob says whether its path exists at the parent: a
// delete of a path without one is left out rather than refused by GitHub.
//
// Requests per commit: 3 on a head whose tree the client knows (its own
// last commit, or one it read with Tree), 4 otherwise; plus one per binary
// or large file. A new branch costs the same (POST git/refs instead of the
// PATCH). An empty repository: see bootstrapChain.
//
// The ref update is a fast-forward check, not an exact compare-and-swap:
// if the branch was force-moved back to an ancestor of ExpectedHead, the
// update still succeeds. Nothing on the branch is lost either way.
func (c *Client) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	return forges.CommitOne(ctx, c, req)
}

// chainLimit bounds a chain to what one minute of GitHub's secondary limit
// takes: 80 content-creating requests a minute
// (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits),
// and a chain of 25 makes 51. A longer one would only wait in the pacer
// with the branch unmoved, where two chains land more of it sooner.
const chainLimit = 25

// ChainLimit is the most commits CommitChain takes at once.
func (c *Client) ChainLimit() int { return chainLimit }

// CommitChain creates the tree and commit of each request on the one
// before and moves the branch once, to the last commit
// (forges.ChainCommitter): a chain of N costs 2N+1 requests (2N+2 when the
// head's tree is not known), plus one per binary or large file, where N
// commits would cost 3N. The trees and commits are objects no ref points
// at until the ref update, so a refused update leaves none of them on the
// branch.
func (c *Client) CommitChain(ctx context.Context, reqs []forges.CommitRequest) ([]forges.CommitResult, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	first := reqs[0]
	op := "commit to " + first.Branch
	for i, req := range reqs {
		if err := c.checkRequest(i, req); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	key := chainKey(reqs, c.verified)
	if results, ok := c.unpublished.take(key); ok {
		if err := c.pace(op, 1); err != nil {
			c.unpublished.remember(key, results)
			return nil, err
		}
		return c.moveBranch(ctx, op, key, first, results)
	}
	if err := c.pace(op, c.contentRequests(reqs)); err != nil {
		return nil, err
	}
	parent := cmp.Or(first.ExpectedHead, first.BaseHead)
	results, err := c.writeChain(ctx, op, reqs, parent)
	switch {
	case parent == "" && errors.Is(err, forges.ErrEmptyRepository):
		return c.bootstrapChain(ctx, op, reqs)
	case err != nil:
		return nil, err
	}
	return c.moveBranch(ctx, op, key, first, results)
}

// checkRequest refuses, before anything is sent, a request the client
// cannot commit as asked.
func (c *Client) checkRequest(i int, req forges.CommitRequest) error {
	switch {
	case req.Branch == "":
		return errors.New("branch is empty")
	case req.MergeParent != "" && i > 0:
		return errors.New("only the first commit of a chain may have a merge parent")
	case req.MergeParent != "" && req.ExpectedHead == "":
		return errors.New("a merge parent needs an expected head: a merge commit lands on an existing branch")
	}
	for _, change := range req.Changes {
		if err := forges.ValidatePath(change.Path); err != nil {
			return fmt.Errorf("change %q: %w", change.Path, err)
		}
	}
	if req.Signer != nil && c.verified {
		return fmt.Errorf("%w: in verified mode GitHub signs the commit as the App", forges.ErrSigningUnsupported)
	}
	return nil
}

// CommitsMergeParent is true: "Create a commit" takes the parents as a
// list, "for a merge commit, an array of more than one should be
// provided" (https://docs.github.com/rest/git/commits#create-a-commit), and
// "Create a tree" builds on any base_tree, here the merge parent's
// (forges.MergeCommitter).
func (c *Client) CommitsMergeParent() bool { return true }

// CarriesSignatures is true in author mode, where a request's signature is
// sent as the commit's "signature" ("Create a commit",
// https://docs.github.com/rest/git/commits#create-a-commit), and false in
// verified mode, where GitHub signs.
func (c *Client) CarriesSignatures() bool { return !c.verified }

// moveBranch points first.Branch at the chain's last commit: a fast
// forward from first.ExpectedHead, or a new branch when there is none. A
// commit whose ref update was held back for a reason that changed nothing
// on the branch (a rate limit, a transient failure) is remembered, so the
// retry sends the ref update alone.
func (c *Client) moveBranch(ctx context.Context, op string, key [sha256.Size]byte, first forges.CommitRequest, results []forges.CommitResult) ([]forges.CommitResult, error) {
	last := results[len(results)-1].Commit
	var err error
	if first.ExpectedHead != "" {
		err = c.fastForward(ctx, op, first.Branch, last)
	} else {
		err = c.createBranch(ctx, op, first.Branch, last)
	}
	if errors.Is(err, forges.ErrRateLimited) || errors.Is(err, forges.ErrTransient) {
		c.unpublished.remember(key, results)
	}
	if err != nil {
		return nil, err
	}
	return results, nil
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

// contentRequests is how many content-creating requests a chain sends: for
// each commit a blob per file that does not go inline, the tree and the
// commit; and one ref update for them all.
func (c *Client) contentRequests(reqs []forges.CommitRequest) int {
	n := 1
	for _, req := range reqs {
		n += 2
		for _, change := range req.Changes {
			if !change.Delete && !c.inline(change.Content) {
				n++
			}
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

// createBranch is "Create a reference"
// (https://docs.github.com/rest/git/refs#create-a-reference); 422
// "Reference already exists" means another writer created it first.
func (c *Client) createBranch(ctx context.Context, op, branch, commit string) error {
	_, _, err := c.api.Git.CreateRef(ctx, c.owner, c.repo, github.CreateRef{Ref: "refs/heads/" + branch, SHA: commit})
	return c.classify(op, err, http.StatusUnprocessableEntity)
}

// writeChain creates the tree and commit of each request, the first on
// parent and each later one on the commit before it; no ref moves. An
// empty parent starts a history without parents: a new orphan branch, or
// the first commit of an empty repository, which the Git Database API
// refuses with 409 (see bootstrapChain). A first request with a merge
// parent builds its tree on the merge parent's tree (base_tree) and names
// both commits as parents, the expected head first.
func (c *Client) writeChain(ctx context.Context, op string, reqs []forges.CommitRequest, parent string) ([]forges.CommitResult, error) {
	baseTree := ""
	if treeSource := cmp.Or(reqs[0].MergeParent, parent); treeSource != "" {
		var err error
		if baseTree, err = c.treeOf(ctx, treeSource); err != nil {
			return nil, c.classify(op, err)
		}
	}
	results := make([]forges.CommitResult, 0, len(reqs))
	for i, req := range reqs {
		parents := []string{parent}
		switch {
		case parent == "":
			parents = nil
		case i == 0 && req.MergeParent != "":
			parents = append(parents, req.MergeParent)
		}
		result, tree, err := c.writeCommit(ctx, op, req, baseTree, parents)
		if err != nil {
			return nil, err
		}
		results = append(results, result)
		parent, baseTree = result.Commit, tree
	}
	return results, nil
}

// writeCommit creates the tree (on baseTree, "" for none) and the commit
// (on parents, none for a root commit), and remembers the commit's tree
// for the next commit on it.
func (c *Client) writeCommit(ctx context.Context, op string, req forges.CommitRequest, baseTree string, parents []string) (forges.CommitResult, string, error) {
	entries, blobs, err := c.treeEntries(ctx, req.Changes)
	if err != nil {
		return forges.CommitResult{}, "", c.classify(op, err)
	}
	tree := baseTree
	if len(entries) > 0 || baseTree == "" {
		created, _, err := c.api.Git.CreateTree(ctx, c.owner, c.repo, baseTree, entries)
		if err != nil {
			// A deletion of a path that is gone is refused ("Returns an
			// error if you try to delete a file that does not exist",
			// https://docs.github.com/rest/git/trees#create-a-tree): its
			// base blob named a file the parent does not have, so the
			// caller's view of the tree is stale.
			return forges.CommitResult{}, "", c.classify(op, err, conflictStatusesOfTree(req.Changes)...)
		}
		tree = created.GetSHA()
	}
	commit, opts := c.commitObject(req, tree)
	for _, parent := range parents {
		commit.Parents = append(commit.Parents, &github.Commit{SHA: new(parent)})
	}
	created, _, err := c.api.Git.CreateCommit(ctx, c.owner, c.repo, commit, opts)
	if err != nil {
		return forges.CommitResult{}, "", c.classify(op, err)
	}
	c.commitTrees.put(created.GetSHA(), tree)
	return forges.CommitResult{Commit: created.GetSHA(), Blobs: blobs}, tree, nil
}

func conflictStatusesOfTree(changes []gitfile.Change) []int {
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
// null. A deletion of a path without a base blob (the parent does not have
// it) is already done and left out: GitHub would refuse the tree. It
// returns the blob id of every put path, computed locally for inline
// content (a blob's id is the SHA-1 of its content).
func (c *Client) treeEntries(ctx context.Context, changes []gitfile.Change) ([]*github.TreeEntry, map[string]string, error) {
	entries := make([]*github.TreeEntry, 0, len(changes))
	blobs := map[string]string{}
	for _, change := range changes {
		if change.Delete && change.BaseBlob == "" {
			continue
		}
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
