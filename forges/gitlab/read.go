package gitlab

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/configbutler/gitops-reverser/forges"
)

// treePageSize is the largest page GitLab serves
// (https://docs.gitlab.com/api/rest/#pagination: per_page at most 100).
const treePageSize = 100

// Head returns the commit branch points at. A missing branch is
// forges.ErrNotFound, or forges.ErrEmptyRepository when the project has
// no commits at all.
// https://docs.gitlab.com/api/branches/#get-single-repository-branch
func (c *Client) Head(ctx context.Context, branch string) (string, error) {
	op := "read head of " + branch
	head, err := c.branchHead(ctx, op, branch)
	if forges.KindOf(err) != forges.KindNotFound {
		return head, err
	}
	// GitLab answers 404 alike for a missing branch and a missing project,
	// and client-go drops the body that tells them apart; the project says
	// which, and whether it is empty.
	project, resp, projectErr := c.api.Projects.GetProject(c.project, nil, gl.WithContext(ctx))
	if projectErr != nil {
		return "", classify("read project "+c.project, resp, projectErr)
	}
	if project.EmptyRepo {
		return "", forges.Errorf(forges.KindEmptyRepository, op, fmt.Errorf("project %s has no commits", c.project))
	}
	return "", err
}

// branchHead reads the branch's commit, with no second request on 404.
func (c *Client) branchHead(ctx context.Context, op, branch string) (string, error) {
	b, resp, err := c.api.Branches.GetBranch(c.project, branch, gl.WithContext(ctx))
	if err != nil {
		return "", classify(op, resp, err)
	}
	if b.Commit == nil || b.Commit.ID == "" {
		return "", forges.Errorf(forges.KindTransient, op, fmt.Errorf("GitLab returned branch %s without a commit", branch))
	}
	return b.Commit.ID, nil
}

// Tree lists the files of commit below the directory prefix ("" or "."
// for the whole tree); a prefix that names no directory lists nothing.
// Submodules are not files and are left out.
// https://docs.gitlab.com/api/repositories/#list-repository-tree
func (c *Client) Tree(ctx context.Context, commit, prefix string) ([]forges.TreeEntry, error) {
	op := fmt.Sprintf("read tree of %s", commit)
	dir := strings.Trim(prefix, "/")
	if dir == "." {
		dir = ""
	}
	entries, found, err := c.listFiles(ctx, op, commit, dir)
	if err != nil || found {
		return entries, err
	}
	// Since GitLab 17.7 a missing path is 404, like a missing commit (same
	// page): a commit that exists means the directory does not.
	if _, resp, err := c.api.Commits.GetCommit(c.project, commit, nil, gl.WithContext(ctx)); err != nil {
		return nil, classify(op, resp, err)
	}
	return nil, nil
}

// listFiles lists every file below dir at commit, following the keyset
// pagination the tree endpoint documents since GitLab 15.0 (a Link
// rel="next" header; offset headers are followed too, for older
// servers). found is false when GitLab answers 404 for the listing.
func (c *Client) listFiles(ctx context.Context, op, commit, dir string) (entries []forges.TreeEntry, found bool, err error) {
	opt := &gl.ListTreeOptions{
		ListOptions: gl.ListOptions{Pagination: "keyset", PerPage: treePageSize},
		Ref:         gl.Ptr(commit),
		Recursive:   gl.Ptr(true),
	}
	if dir != "" {
		opt.Path = gl.Ptr(dir)
	}
	options := []gl.RequestOptionFunc{gl.WithContext(ctx)}
	for {
		nodes, resp, err := c.api.Repositories.ListTree(c.project, opt, options...)
		if err != nil {
			err = classify(op, resp, err)
			if forges.KindOf(err) == forges.KindNotFound {
				return nil, false, nil
			}
			return nil, false, err
		}
		for _, node := range nodes {
			entry, isFile, err := treeEntry(node)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", op, err)
			}
			if isFile {
				entries = append(entries, entry)
			}
		}
		next, more := gl.WithNext(resp)
		if !more {
			break
		}
		options = []gl.RequestOptionFunc{gl.WithContext(ctx), next}
	}
	return entries, true, nil
}

// treeEntry converts a listing node; directories and submodules are not
// files.
func treeEntry(node *gl.TreeNode) (forges.TreeEntry, bool, error) {
	if node.Type != "blob" {
		return forges.TreeEntry{}, false, nil
	}
	mode, err := strconv.ParseUint(node.Mode, 8, 32)
	if err != nil {
		return forges.TreeEntry{}, false, fmt.Errorf("mode %q of %s: %w", node.Mode, node.Path, err)
	}
	return forges.TreeEntry{Path: node.Path, BlobID: node.ID, Mode: forges.FileMode(mode)}, true, nil
}

// Blob returns a blob's content by id.
// https://docs.gitlab.com/api/repositories/#raw-blob-content
func (c *Client) Blob(ctx context.Context, id string) ([]byte, error) {
	content, resp, err := c.api.Repositories.RawBlobContent(c.project, id, gl.WithContext(ctx))
	if err != nil {
		return nil, classify("read blob "+id, resp, err)
	}
	return content, nil
}
