package github

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
)

// Head reads the branch ("Get a reference",
// https://docs.github.com/rest/git/refs#get-a-reference): 404 for a missing
// branch, 409 "Git Repository is empty." for a repository without commits.
func (c *Client) Head(ctx context.Context, branch string) (string, error) {
	ref, _, err := c.api.Git.GetRef(ctx, c.owner, c.repo, "heads/"+branch)
	if err != nil {
		return "", c.classify("read head of "+branch, err)
	}
	return ref.GetObject().GetSHA(), nil
}

// Tree lists the files of commit below the directory prefix ("" or "." for
// all), paths relative to the repository root. Submodules are not files and
// are left out.
//
// One recursive read ("Get a tree" with recursive,
// https://docs.github.com/rest/git/trees#get-a-tree) answers for trees
// below GitHub's limit ("100,000 entries with a maximum size of 7 MB");
// past it the answer is truncated, and the documented way on is "the
// non-recursive method of fetching trees, and fetch one sub-tree at a time".
// The whole tree is read even for a prefix: one request costs less of the
// rate limit than walking down to the prefix one level at a time.
func (c *Client) Tree(ctx context.Context, commit, prefix string) ([]forges.TreeEntry, error) {
	op := fmt.Sprintf("read tree of %s", commit)
	dir, err := forges.CleanPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	root, err := c.treeOf(ctx, commit)
	if err != nil {
		return nil, c.classify(op, err)
	}
	listing, _, err := c.api.Git.GetTree(ctx, c.owner, c.repo, root, true)
	if err != nil {
		return nil, c.classify(op, err)
	}
	if !listing.GetTruncated() {
		return filesBelow(listing.Entries, "", dir), nil
	}
	subtree, found, err := c.descend(ctx, root, dir)
	if err != nil || !found {
		return nil, c.classify(op, err)
	}
	entries, err := c.listSubtree(ctx, subtree, dir)
	return entries, c.classify(op, err)
}

// treeOf returns a commit's root tree: from the cache for commits this
// client made or read, else with one "Get a commit object" request
// (https://docs.github.com/rest/git/commits#get-a-commit-object). A commit
// names its parent's root tree as base_tree, which no change's base blob
// can stand in for: this cache holds one id per commit, no listing of
// files, and what exists at a path comes from the base blobs.
func (c *Client) treeOf(ctx context.Context, commit string) (string, error) {
	if tree, ok := c.commitTrees.get(commit); ok {
		return tree, nil
	}
	read, _, err := c.api.Git.GetCommit(ctx, c.owner, c.repo, commit)
	if err != nil {
		return "", err
	}
	tree := read.GetTree().GetSHA()
	c.commitTrees.put(commit, tree)
	return tree, nil
}

// descend walks from the root tree to the directory dir, one
// non-recursive read per path segment.
func (c *Client) descend(ctx context.Context, root, dir string) (string, bool, error) {
	current := root
	for segment := range strings.SplitSeq(dir, "/") {
		if segment == "" {
			continue
		}
		listing, _, err := c.api.Git.GetTree(ctx, c.owner, c.repo, current, false)
		if err != nil {
			return "", false, err
		}
		next := ""
		for _, entry := range listing.Entries {
			if entry.GetPath() == segment && entry.GetType() == "tree" {
				next = entry.GetSHA()
			}
		}
		if next == "" {
			return "", false, nil
		}
		current = next
	}
	return current, true, nil
}

// listSubtree lists the files of tree, whose path is dir: recursively when
// GitHub's limit allows, else one level at a time.
func (c *Client) listSubtree(ctx context.Context, tree, dir string) ([]forges.TreeEntry, error) {
	listing, _, err := c.api.Git.GetTree(ctx, c.owner, c.repo, tree, true)
	if err != nil {
		return nil, err
	}
	if !listing.GetTruncated() {
		return filesBelow(listing.Entries, dir, ""), nil
	}
	level, _, err := c.api.Git.GetTree(ctx, c.owner, c.repo, tree, false)
	if err != nil {
		return nil, err
	}
	files := filesBelow(level.Entries, dir, "")
	for _, entry := range level.Entries {
		if entry.GetType() != "tree" {
			continue
		}
		below, err := c.listSubtree(ctx, entry.GetSHA(), joinPath(dir, entry.GetPath()))
		if err != nil {
			return nil, err
		}
		files = append(files, below...)
	}
	return files, nil
}

// filesBelow keeps the blobs of a tree listing (paths relative to the tree
// at base) that lie below the directory dir.
func filesBelow(entries []*github.TreeEntry, base, dir string) []forges.TreeEntry {
	var files []forges.TreeEntry
	for _, entry := range entries {
		if entry.GetType() != "blob" {
			continue
		}
		full := joinPath(base, entry.GetPath())
		if dir != "" && !strings.HasPrefix(full, dir+"/") {
			continue
		}
		files = append(files, forges.TreeEntry{Path: full, BlobID: entry.GetSHA(), Mode: modeOf(entry.GetMode())})
	}
	return files
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// modeOf maps a tree entry's mode ("100644 for file (blob), 100755 for
// executable (blob) ... 120000 for a blob that specifies the path of a
// symlink", https://docs.github.com/rest/git/trees#create-a-tree).
func modeOf(mode string) forges.FileMode {
	switch mode {
	case "100755":
		return forges.ModeExecutable
	case "120000":
		return forges.ModeSymlink
	}
	return forges.ModeRegular
}

// Blob reads a blob ("Get a blob", https://docs.github.com/rest/git/blobs#get-a-blob),
// whose content comes base64-encoded.
func (c *Client) Blob(ctx context.Context, id string) ([]byte, error) {
	op := "read blob " + id
	blob, _, err := c.api.Git.GetBlob(ctx, c.owner, c.repo, id)
	if err != nil {
		return nil, c.classify(op, err)
	}
	if blob.GetEncoding() == "utf-8" {
		return []byte(blob.Content), nil
	}
	content, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(blob.Content, "\n", ""))
	if err != nil {
		return nil, fmt.Errorf("%s: decoding base64 content: %w", op, err)
	}
	return content, nil
}
