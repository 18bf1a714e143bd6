package gogit

import (
	"context"
	"errors"
	"fmt"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/configbutler/gitops-reverser/forges"
)

var (
	_ forges.HistoryReader  = (*Client)(nil)
	_ forges.ChainCommitter = (*Client)(nil)
)

// historyRef is where a history fetch records head, in its own throwaway
// store.
const historyRef = plumbing.ReferenceName(privateRefPrefix + "history")

// historyFirstDepth is the depth of the first, cheap look: the commit
// sought is most often a few commits behind head (the operator's own last
// commits, a colleague's edit).
const historyFirstDepth = 8

// InHistory fetches head's last commits into a store of its own, which is
// dropped afterwards, and walks their parents looking for commit. Plain Git
// has no way to ask the server, and fetching history costs trees and blobs
// too, so it looks historyFirstDepth commits back first and the full depth
// only when that was not enough. A head no ref points at is fetched by id,
// where the server allows it; one it does not have is false.
func (c *Client) InHistory(ctx context.Context, head, commit string, depth int) (bool, error) {
	if head == commit {
		return true, nil
	}
	headHash, err := parseObjectID(head)
	if err != nil {
		return false, nil
	}
	want, err := parseObjectID(commit)
	if err != nil {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	spec, err := c.historySpec(ctx, headHash)
	if err != nil {
		return false, classify("list the remote's refs", err)
	}
	for _, d := range []int{min(historyFirstDepth, depth), depth} {
		found, complete, err := c.searchHistory(ctx, spec, headHash, want, d)
		if err != nil || found || complete {
			return found, err
		}
	}
	return false, nil
}

// historySpec is the refspec that brings head: a ref pointing at it, else
// head by id.
func (c *Client) historySpec(ctx context.Context, head plumbing.Hash) (config.RefSpec, error) {
	source, found := c.refPointingAt(head, "")
	if !found {
		if _, err := c.listRemoteRefs(ctx); err != nil {
			return "", err
		}
		source, found = c.refPointingAt(head, "")
	}
	if !found {
		return config.RefSpec("+" + head.String() + ":" + historyRef.String()), nil
	}
	return config.RefSpec("+" + source.String() + ":" + historyRef.String()), nil
}

// searchHistory fetches depth commits of head's history and looks for
// want among them. complete says the fetched history ended before depth:
// nothing older exists to look at.
func (c *Client) searchHistory(ctx context.Context, spec config.RefSpec, head, want plumbing.Hash, depth int) (found, complete bool, err error) {
	store := memory.NewStorage()
	remote := git.NewRemote(store, &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{c.url}})
	err = remote.FetchContext(ctx, &git.FetchOptions{RefSpecs: []config.RefSpec{spec}, Depth: depth, Auth: c.auth, Tags: git.NoTags})
	switch {
	case errors.Is(err, git.ErrExactSHA1NotSupported), hungUp(err):
		return false, true, nil // the head is gone from the remote
	case err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate):
		return false, false, classify(fmt.Sprintf("fetch the history of %s", head), err)
	}
	seen := map[plumbing.Hash]bool{}
	loaded := 0
	queue := []plumbing.Hash{head}
	for len(queue) > 0 {
		current := queue[0]
		queue = queue[1:]
		if current == want {
			return true, false, nil
		}
		if seen[current] {
			continue
		}
		seen[current] = true
		commit, err := object.GetCommit(store, current)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue // the shallow boundary
		}
		if err != nil {
			return false, false, fmt.Errorf("reading fetched commit %s: %w", current, err)
		}
		loaded++
		queue = append(queue, commit.ParentHashes...)
	}
	return false, loaded < depth, nil
}
