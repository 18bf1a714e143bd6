package github

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

// Test helpers: they read and change repositories directly, as another
// writer (or the GitHub web UI) would, without going through the API, its
// authentication, its rate limits or its request log.

// externalWriter is who authors the helpers' commits.
func (s *Server) externalWriter() object.Signature {
	return object.Signature{Name: "External Writer", Email: "external@example.com", When: s.config.now()}
}

// CreateRepo creates owner/name. With seed non-nil (even empty) the
// repository gets a first commit on main holding seed (path → content);
// with nil it stays empty, as a repository created without a README.
func (s *Server) CreateRepo(owner, name string, seed map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := repoKey(owner, name)
	if _, exists := s.repos[key]; exists {
		return fmt.Errorf("repository %s already exists", key)
	}
	s.nextID++
	repo := newRepository(s.nextID, owner, name)
	s.repos[key] = repo
	if seed == nil {
		return nil
	}
	_, err := s.commitFiles(repo, "main", seed, "Initial commit")
	return err
}

// Commit commits files (path → content) on top of branch, creating the
// branch (or the repository's first commit) when it does not exist, and
// returns the new commit's id.
func (s *Server) Commit(owner, name, branch string, files map[string]string, message string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, ok := s.repos[repoKey(owner, name)]
	if !ok {
		return "", fmt.Errorf("repository %s/%s does not exist", owner, name)
	}
	h, err := s.commitFiles(repo, branch, files, message)
	return h.String(), err
}

func (s *Server) commitFiles(repo *repository, branch string, changes map[string]string, message string) (plumbing.Hash, error) {
	files, exists, err := repo.filesAt(branch)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !exists {
		files = gitobjects.Files{}
	}
	for path, content := range changes {
		blob, err := repo.WriteBlob([]byte(content))
		if err != nil {
			return plumbing.ZeroHash, err
		}
		putPath(files, path, gitobjects.Entry{Mode: filemode.Regular, Hash: blob})
	}
	tree, err := repo.WriteFiles(files)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	writer := s.externalWriter()
	commit := &object.Commit{Author: writer, Committer: writer, Message: message, TreeHash: tree}
	if exists {
		commit.ParentHashes = []plumbing.Hash{repo.branches[branch]}
	}
	h, err := repo.WriteCommit(commit)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if repo.empty() {
		repo.defaultBranch = branch
	}
	repo.branches[branch] = h
	return h, nil
}

// File returns the content of path at the head of branch; ok is false when
// the repository, the branch or the file does not exist.
func (s *Server) File(owner, name, branch, path string) (content string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, exists := s.repos[repoKey(owner, name)]
	if !exists {
		return "", false
	}
	files, exists, err := repo.filesAt(branch)
	if err != nil || !exists {
		return "", false
	}
	entry, exists := files[path]
	if !exists {
		return "", false
	}
	raw, err := repo.Blob(entry.Hash)
	return string(raw), err == nil
}

// Commit describes a commit as Git stores it.
type Commit struct {
	SHA       string
	Tree      string
	Parents   []string
	Message   string
	Author    object.Signature
	Committer object.Signature
	// Signature is the commit's signature ("" when unsigned) and
	// SignedPayload the bytes it signs: the commit without its signature.
	Signature     string
	SignedPayload string
}

// HeadCommit describes the commit at the head of branch.
func (s *Server) HeadCommit(owner, name, branch string) (Commit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, ok := s.repos[repoKey(owner, name)]
	if !ok {
		return Commit{}, fmt.Errorf("repository %s/%s does not exist", owner, name)
	}
	head, ok := repo.branches[branch]
	if !ok {
		return Commit{}, fmt.Errorf("branch %s does not exist in %s/%s", branch, owner, name)
	}
	commit, err := repo.Commit(head)
	if err != nil {
		return Commit{}, err
	}
	out := Commit{SHA: head.String(), Tree: commit.TreeHash.String(), Message: commit.Message,
		Author: commit.Author, Committer: commit.Committer, Signature: commit.PGPSignature}
	for _, parent := range commit.ParentHashes {
		out.Parents = append(out.Parents, parent.String())
	}
	if commit.PGPSignature != "" {
		if out.SignedPayload, err = signedPayload(commit); err != nil {
			return Commit{}, err
		}
	}
	return out, nil
}

// BlockContentCreation answers every content-creating request (POST,
// PATCH, PUT, DELETE) as a secondary rate limit, 403 with retry-after,
// until d has passed on the simulator's clock; reads go on. GitHub's own
// documentation allows for it: "Some endpoints have lower content creation
// limits" and "You may also encounter a secondary rate limit for
// undisclosed reasons". It lets a test meet the limit on exactly the
// request it wants, without spending the counted budgets first.
func (s *Server) BlockContentCreation(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits.contentBlockedUntil = s.config.now().Add(d)
}

// Requests returns the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestCount is the number of requests answered so far.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Clock is a settable clock for WithClock, shared by the simulator and the
// client under test so a test can let a rate-limit wait pass instantly.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts a clock at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// AppSigned reports whether GitHub would show commit sha as Verified
// because it signed it as the App.
func (s *Server) AppSigned(owner, name, sha string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, ok := s.repos[repoKey(owner, name)]
	return ok && repo.appSigned[plumbing.NewHash(sha)]
}
