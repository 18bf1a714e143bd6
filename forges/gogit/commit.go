package gogit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configbutler/gitops-reverser/forges"
)

// Commit builds one commit in the object store (blobs, the trees on the
// changed paths, the commit) and pushes it to req.Branch with a
// compare-and-swap: the branch must still point at req.ExpectedHead, or
// not exist when ExpectedHead is empty. When it moved, the error is
// forges.ErrConflict and the remote is unchanged.
func (c *Client) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	return forges.CommitOne(ctx, c, req)
}

// chainLimit bounds one push's commits. Each is a few small objects in
// memory until the push; 500 of them is a backlog of minutes of
// interleaved authors (scenario J in docs/benchmarks.md: about 850 windows
// from 900 writes in two seconds) drained in two pushes.
const chainLimit = 500

// ChainLimit is the most commits CommitChain takes in one push.
func (c *Client) ChainLimit() int { return chainLimit }

// CommitChain builds the commits of reqs in the object store, each on the
// one before, and pushes them in one receive-pack session that moves
// the branch from reqs[0]'s expected head to the last commit: a backlog
// of windows costs one push, not one per commit (forges.ChainCommitter).
func (c *Client) CommitChain(ctx context.Context, reqs []forges.CommitRequest) ([]forges.CommitResult, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	op := "commit to " + reqs[0].Branch
	branch, expected, base, err := parseCommitRequest(reqs[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	mergeParent, err := parseMergeParent(reqs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	parent := expected
	if parent.IsZero() {
		parent = base
	}
	// start is the commit whose tree the chain builds on: the merge
	// parent's, when the first commit is a merge.
	start, tree, err := c.startTree(ctx, branch, parent, expected, mergeParent)
	if err != nil {
		return nil, classify(op, err)
	}
	var objects []plumbing.Hash
	results := make([]forges.CommitResult, 0, len(reqs))
	for i, req := range reqs {
		builder, err := newTreeBuilder(c.objects, tree)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if err := builder.apply(req.Changes); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if tree, err = builder.write(); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		parents := []plumbing.Hash{parent}
		if i == 0 && !mergeParent.IsZero() {
			parents = append(parents, mergeParent)
		}
		commit, err := c.writeCommit(req, tree, parents...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		objects = append(append(objects, builder.written...), commit)
		results = append(results, forges.CommitResult{Commit: commit.String(), Blobs: builder.blobs})
		parent = commit
	}
	if err := c.push(ctx, branch, expected, parent, objects); err != nil {
		return nil, classify(op, err)
	}
	// On a snapshot whose blobs were released the new one keeps its trees
	// only, as the worker holds what it wrote.
	c.keepSnapshot(privateRef(branch), parent, c.keepsBlobsOf(start))
	return results, nil
}

func parseCommitRequest(req forges.CommitRequest) (branch plumbing.ReferenceName, expected, base plumbing.Hash, err error) {
	if branch, err = branchRefName(req.Branch); err != nil {
		return "", plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	if req.ExpectedHead != "" {
		if expected, err = parseObjectID(req.ExpectedHead); err != nil {
			return "", plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("expected head: %w", err)
		}
	}
	if req.ExpectedHead == "" && req.BaseHead != "" {
		if base, err = parseObjectID(req.BaseHead); err != nil {
			return "", plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("base head: %w", err)
		}
	}
	return branch, expected, base, nil
}

// CommitsMergeParent is true: the commit is built here, with as many
// parents as asked (forges.MergeCommitter).
func (c *Client) CommitsMergeParent() bool { return true }

// parseMergeParent reads reqs[0].MergeParent, which needs an expected head;
// a later request's is refused (forges.CommitRequest: only the first of a
// chain may carry one).
func parseMergeParent(reqs []forges.CommitRequest) (plumbing.Hash, error) {
	for _, req := range reqs[1:] {
		if req.MergeParent != "" {
			return plumbing.ZeroHash, errors.New("only the first commit of a chain may have a merge parent")
		}
	}
	if reqs[0].MergeParent == "" {
		return plumbing.ZeroHash, nil
	}
	if reqs[0].ExpectedHead == "" {
		return plumbing.ZeroHash, errors.New("a merge parent needs an expected head: a merge commit lands on an existing branch")
	}
	hash, err := parseObjectID(reqs[0].MergeParent)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("merge parent: %w", err)
	}
	return hash, nil
}

// startTree returns the commit the chain's first tree is built on and its
// tree: the parent's, or the merge parent's when there is one. The merge
// parent is fetched like any commit (its snapshot, depth 1, through the
// ref that points at it); one the remote no longer has at the head of a
// ref, and does not serve by id, means the base moved since the caller
// read it: a conflict, to plan again on the new base. The expected head
// itself is not read then: the push's compare-and-swap checks it.
func (c *Client) startTree(ctx context.Context, branch plumbing.ReferenceName, parent, expected, mergeParent plumbing.Hash) (plumbing.Hash, plumbing.Hash, error) {
	if mergeParent.IsZero() {
		tree, err := c.parentTree(ctx, branch, parent, !expected.IsZero())
		return parent, tree, err
	}
	tree, err := c.loadTree(ctx, mergeParent, "")
	if err != nil {
		err = classify("read merge parent "+mergeParent.String(), err)
		if forges.KindOf(err) == forges.KindNotFound {
			return plumbing.ZeroHash, plumbing.ZeroHash, forges.Errorf(forges.KindConflict, "read merge parent",
				fmt.Errorf("no ref of the remote points at %s any more: %w", mergeParent, err))
		}
		return plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	return mergeParent, tree, nil
}

// parentTree returns the tree the new commit starts from: the parent's,
// or none for an orphan commit. A parent that is the expected head of the
// branch but can no longer be fetched means the branch moved: that is a
// conflict, not a missing commit.
func (c *Client) parentTree(ctx context.Context, branch plumbing.ReferenceName, parent plumbing.Hash, parentIsExpectedHead bool) (plumbing.Hash, error) {
	if parent.IsZero() {
		return plumbing.ZeroHash, nil
	}
	tree, err := c.loadTree(ctx, parent, branch)
	if err == nil {
		return tree, nil
	}
	err = classify("read parent commit "+parent.String(), err)
	if !parentIsExpectedHead || forges.KindOf(err) != forges.KindNotFound {
		return plumbing.ZeroHash, err
	}
	refs, listErr := c.listRemoteRefs(ctx)
	if listErr != nil {
		return plumbing.ZeroHash, err
	}
	head, found := refs[branch]
	switch {
	case !found:
		return plumbing.ZeroHash, forges.Errorf(forges.KindConflict, "read expected head",
			fmt.Errorf("%s no longer exists; expected it at %s (%v)", branch, parent, err))
	case head != parent:
		return plumbing.ZeroHash, forges.Errorf(forges.KindConflict, "read expected head",
			fmt.Errorf("%s is at %s, not at the expected %s (%v)", branch, head, parent, err))
	}
	return plumbing.ZeroHash, err
}

// writeCommit stores the commit object, signed when req.Signer is set.
// The signature covers the commit exactly as it is encoded without one,
// which is what git verify-commit checks; go-git writes it as the gpgsig
// header, for OpenPGP and SSH signatures alike.
func (c *Client) writeCommit(req forges.CommitRequest, tree plumbing.Hash, parents ...plumbing.Hash) (plumbing.Hash, error) {
	committer := req.Committer
	if committer.Name == "" && committer.Email == "" {
		committer = req.Author
	}
	commit := &object.Commit{
		Author:    gitSignature(req.Author),
		Committer: gitSignature(committer),
		Message:   req.Message,
		TreeHash:  tree,
	}
	for _, parent := range parents {
		if !parent.IsZero() {
			commit.ParentHashes = append(commit.ParentHashes, parent)
		}
	}
	if req.Signer != nil {
		signature, err := signCommit(commit, req.Signer)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		commit.PGPSignature = signature
	}
	encoded := c.objects.NewEncodedObject()
	if err := commit.Encode(encoded); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encoding the commit: %w", err)
	}
	hash, err := c.objects.SetEncodedObject(encoded)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("storing the commit: %w", err)
	}
	return hash, nil
}

func signCommit(commit *object.Commit, signer forges.Signer) (string, error) {
	unsigned := &plumbing.MemoryObject{}
	if err := commit.EncodeWithoutSignature(unsigned); err != nil {
		return "", fmt.Errorf("encoding the commit to sign: %w", err)
	}
	reader, err := unsigned.Reader()
	if err != nil {
		return "", fmt.Errorf("reading the commit to sign: %w", err)
	}
	defer reader.Close()
	payload, err := io.ReadAll(reader)
	if err != nil {
		return "", fmt.Errorf("reading the commit to sign: %w", err)
	}
	signature, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("signing the commit: %w", err)
	}
	if len(bytes.TrimSpace(signature)) == 0 {
		return "", fmt.Errorf("signing the commit: the signer returned an empty signature")
	}
	return string(signature), nil
}

// gitSignature converts an identity; a zero time means now, as Git would
// stamp it, rather than the year 1.
func gitSignature(signature forges.Signature) object.Signature {
	when := signature.When
	if when.IsZero() {
		when = time.Now()
	}
	return object.Signature{Name: signature.Name, Email: signature.Email, When: when}
}
