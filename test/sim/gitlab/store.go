package gitlab

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

// project is one repository: real Git objects (gitobjects), so every id
// the API hands out is the one Git computes, and its branches.
type project struct {
	*gitobjects.Store
	id            int
	path          string
	branches      map[string]plumbing.Hash
	defaultBranch string
	// mergeRequests are the project's merge requests, oldest first, iid
	// from 1 (api_merge_requests.go).
	mergeRequests []*mergeRequest
}

func newProject(id int, path string) *project {
	return &project{Store: gitobjects.NewStore(), id: id, path: path, branches: map[string]plumbing.Hash{}}
}

func (p *project) empty() bool { return len(p.branches) == 0 }

// signature is a commit identity.
type signature struct {
	name, email string
}

func (p *project) writeCommit(tree plumbing.Hash, parents []plumbing.Hash, message string, author, committer signature, when time.Time) (plumbing.Hash, error) {
	return p.WriteCommit(&object.Commit{
		Author:       object.Signature{Name: author.name, Email: author.email, When: when},
		Committer:    object.Signature{Name: committer.name, Email: committer.email, When: when},
		Message:      message,
		TreeHash:     tree,
		ParentHashes: parents,
	})
}

// resolve finds a commit by full id or branch name, as GitLab's ref
// parameters accept either.
func (p *project) resolve(ref string) (*object.Commit, bool) {
	if head, ok := p.branches[ref]; ok {
		c, err := p.Commit(head)
		return c, err == nil
	}
	if !plumbing.IsHash(ref) {
		return nil, false
	}
	c, err := p.Commit(plumbing.NewHash(ref))
	return c, err == nil
}

// filesOf flattens a commit's tree; a nil commit (an empty repository)
// has no files. Submodules are not files and are left out.
func (p *project) filesOf(c *object.Commit) (gitobjects.Files, error) {
	if c == nil {
		return gitobjects.Files{}, nil
	}
	out, err := p.FilesOf(c.TreeHash)
	if err != nil {
		return nil, err
	}
	for path, entry := range out {
		if entry.Mode == filemode.Submodule {
			delete(out, path)
		}
	}
	return out, nil
}

// lastCommitForPath is `git log -1 <from> -- path` on first-parent
// history: the newest commit whose parent had the path differently (or not
// at all). ok is false when no commit reachable from from touched it.
func (p *project) lastCommitForPath(from plumbing.Hash, path string) (plumbing.Hash, bool, error) {
	current, err := p.Commit(from)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	for {
		here, hereOK, err := p.entryAt(current, path)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if len(current.ParentHashes) == 0 {
			return current.Hash, hereOK, nil
		}
		parent, err := p.Commit(current.ParentHashes[0])
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		before, beforeOK, err := p.entryAt(parent, path)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		if hereOK != beforeOK || here != before {
			return current.Hash, true, nil
		}
		current = parent
	}
}

func (p *project) entryAt(c *object.Commit, path string) (gitobjects.Entry, bool, error) {
	tree, err := c.Tree()
	if err != nil {
		return gitobjects.Entry{}, false, err
	}
	entry, err := tree.FindEntry(path)
	// A path through a file ("a.yaml/b") finds no tree object: also absent.
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) ||
		errors.Is(err, plumbing.ErrObjectNotFound) {
		return gitobjects.Entry{}, false, nil
	}
	if err != nil {
		return gitobjects.Entry{}, false, fmt.Errorf("reading %s at %s: %w", path, c.Hash, err)
	}
	return gitobjects.Entry{Mode: entry.Mode, Hash: entry.Hash}, true, nil
}
