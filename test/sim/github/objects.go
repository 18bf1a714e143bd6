package github

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// CommitObject returns commit sha of owner/name exactly as the repository
// stores it (what `git cat-file commit` prints), signature header included,
// so a test can hand it to git itself: the id git computes for it is sha
// only if the simulator stored a real Git commit.
func (s *Server) CommitObject(owner, name, sha string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, ok := s.repos[repoKey(owner, name)]
	if !ok {
		return nil, fmt.Errorf("repository %s/%s does not exist", owner, name)
	}
	raw, err := repo.Raw(plumbing.CommitObject, plumbing.NewHash(sha))
	if err != nil {
		return nil, fmt.Errorf("repository %s/%s: %w", owner, name, err)
	}
	return raw, nil
}
