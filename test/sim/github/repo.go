package github

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

// repository is one simulated repository: real Git objects (gitobjects), so
// every id the API hands out is the SHA-1 Git itself would compute, and
// branch heads.
type repository struct {
	*gitobjects.Store
	id            int64
	owner, name   string
	branches      map[string]plumbing.Hash
	defaultBranch string
	// appSigned are commits GitHub signed as the App: made with an
	// installation token and no author, committer or signature.
	appSigned map[plumbing.Hash]bool
	// pulls are the repository's pull requests, oldest first, numbered
	// from 1 (pulls.go).
	pulls    []*pullRequest
	nextPull int64
}

func newRepository(id int64, owner, name string) *repository {
	return &repository{
		Store: gitobjects.NewStore(),
		id:    id, owner: owner, name: name,
		branches:      map[string]plumbing.Hash{},
		appSigned:     map[plumbing.Hash]bool{},
		defaultBranch: "main",
	}
}

// empty: no commit on any branch, which is when GitHub's Git Database API
// answers 409 (docGitDatabase).
func (r *repository) empty() bool { return len(r.branches) == 0 }

// errPathMissing: a deletion names a path the base tree does not have,
// which "Create a tree" refuses ("Returns an error if you try to delete a
// file that does not exist", docTrees).
var errPathMissing = errors.New("path does not exist")

// deletePath removes a file, or a whole directory, from a flattened tree.
func deletePath(files gitobjects.Files, path string) error {
	if _, ok := files[path]; ok {
		delete(files, path)
		return nil
	}
	removed := false
	for existing := range files {
		if strings.HasPrefix(existing, path+"/") {
			delete(files, existing)
			removed = true
		}
	}
	if !removed {
		return fmt.Errorf("%w: %s", errPathMissing, path)
	}
	return nil
}

// putPath sets path to entry, replacing a file where a directory must go
// and a directory where the file goes.
func putPath(files gitobjects.Files, path string, entry gitobjects.Entry) {
	for dir := path; ; {
		i := strings.LastIndex(dir, "/")
		if i < 0 {
			break
		}
		dir = dir[:i]
		delete(files, dir)
	}
	for existing := range files {
		if strings.HasPrefix(existing, path+"/") {
			delete(files, existing)
		}
	}
	files[path] = entry
}

// filesAt returns the flattened tree at the head of branch; ok is false
// when the branch does not exist.
func (r *repository) filesAt(branch string) (gitobjects.Files, bool, error) {
	head, ok := r.branches[branch]
	if !ok {
		return nil, false, nil
	}
	commit, err := r.Commit(head)
	if err != nil {
		return nil, false, err
	}
	files, err := r.FilesOf(commit.TreeHash)
	if err != nil {
		return nil, false, err
	}
	return files, true, nil
}
