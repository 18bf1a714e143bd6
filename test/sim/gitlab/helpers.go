package gitlab

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

// Project is a project the simulator holds.
type Project struct {
	ID   int
	Path string
}

// CommitInfo is what the simulator's own storage says about a commit.
type CommitInfo struct {
	ID             string
	Message        string
	AuthorName     string
	AuthorEmail    string
	AuthorDate     time.Time
	CommitterName  string
	CommitterEmail string
	CommitterDate  time.Time
	Parents        []string
}

// ErrNoProject is returned by the helpers for a project path the
// simulator does not hold.
var ErrNoProject = errors.New("no such project")

// The identities of commits made outside the API: a project's first
// commit, and every Commit. Neither is any token's user.
const (
	SeedName            = "Seed"
	SeedEmail           = "seed@example.com"
	ExternalWriterName  = "External Writer"
	ExternalWriterEmail = "external@example.com"
)

// CreateProject adds a project at path (group/sub/name). With seed, its
// main branch has one commit holding seed (path → content); without, the
// repository is empty, as a new GitLab project without a README is.
func (s *Server) CreateProject(path string, seed map[string]string) (Project, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path = strings.Trim(path, "/")
	if _, taken := s.byPath[path]; taken || path == "" {
		return Project{}, fmt.Errorf("project path %q is taken or empty", path)
	}
	p := newProject(s.nextID, path)
	if seed != nil {
		if _, err := s.commitExternally(p, "main", "Initial commit\n", seed, signature{name: SeedName, email: SeedEmail}); err != nil {
			return Project{}, err
		}
	}
	s.nextID++
	s.projects[p.id] = p
	s.byPath[path] = p
	return Project{ID: p.id, Path: path}, nil
}

// Commit writes files (path → content) to branch as a writer outside the
// API would (a push), and returns the new commit's id. The branch must
// exist unless the repository is empty.
func (s *Server) Commit(projectPath, branch, message string, contents map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.byPath[projectPath]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrNoProject, projectPath)
	}
	if _, exists := p.branches[branch]; !exists && !p.empty() {
		return "", fmt.Errorf("branch %s does not exist in %s", branch, projectPath)
	}
	id, err := s.commitExternally(p, branch, message, contents, signature{name: ExternalWriterName, email: ExternalWriterEmail})
	return id.String(), err
}

func (s *Server) commitExternally(p *project, branch, message string, contents map[string]string, who signature) (plumbing.Hash, error) {
	var parents []plumbing.Hash
	tree := gitobjects.Files{}
	if head, ok := p.branches[branch]; ok {
		parents = []plumbing.Hash{head}
		c, err := p.Commit(head)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if tree, err = p.filesOf(c); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	paths := make([]string, 0, len(contents))
	for path := range contents {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		if refused := p.put(tree, path, []byte(contents[path]), filemode.Regular); refused != nil {
			return plumbing.ZeroHash, errors.New(refused.message)
		}
	}
	treeID, err := p.WriteFiles(tree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	id, err := p.writeCommit(treeID, parents, message, who, who, s.now())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if p.empty() {
		p.defaultBranch = branch
	}
	p.branches[branch] = id
	return id, nil
}

// File reads path at the head of branch; ok is false when the project,
// branch or file does not exist.
func (s *Server) File(projectPath, branch, path string) (content string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, found := s.byPath[projectPath]
	if !found {
		return "", false
	}
	c, found := p.resolve(branch)
	if !found {
		return "", false
	}
	entry, found, err := p.entryAt(c, path)
	if err != nil || !found {
		return "", false
	}
	data, err := p.Blob(entry.Hash)
	if err != nil {
		return "", false
	}
	return string(data), true
}

// HeadCommit describes the commit at the head of branch; ok is false when
// the project or branch does not exist.
func (s *Server) HeadCommit(projectPath, branch string) (CommitInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, found := s.byPath[projectPath]
	if !found {
		return CommitInfo{}, false
	}
	head, found := p.branches[branch]
	if !found {
		return CommitInfo{}, false
	}
	c, err := p.Commit(head)
	if err != nil {
		return CommitInfo{}, false
	}
	info := CommitInfo{
		ID: c.Hash.String(), Message: c.Message,
		AuthorName: c.Author.Name, AuthorEmail: c.Author.Email, AuthorDate: c.Author.When,
		CommitterName: c.Committer.Name, CommitterEmail: c.Committer.Email, CommitterDate: c.Committer.When,
	}
	for _, parent := range c.ParentHashes {
		info.Parents = append(info.Parents, parent.String())
	}
	return info, true
}
