package branch_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// onBranch points a worker at branch instead of main.
func onBranch(name string) func(*branch.Config) {
	return func(c *branch.Config) { c.Key.Branch = name }
}

// existingA is ConfigMap team/a as a human put it on main, at a path of
// their choosing rather than the one the planner would pick.
const existingA = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: team\ndata:\n  v: \"0\"\n"

func gitOut(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := git.Git(repo, args...)
	require.NoError(t, err)
	return out
}

func TestANewBranchStartsFromTheDefaultBranchAndKeepsItsFiles(t *testing.T) {
	_, err := git.CreateRepoWithCommit("from-main", map[string]string{
		"mirror/hand-written/a.yaml": existingA, "outside.txt": "not the target's\n",
	})
	require.NoError(t, err)
	mainHead := gitOut(t, "from-main", "rev-parse", "main")
	w := startWorker(t, "from-main", nil, onBranch("mirror"))

	write(t, w, branch.Author{}, cm("a", "1"))
	write(t, w, branch.Author{}, cm("b", "1"))
	flush(t, w)

	require.Equal(t, mainHead, gitOut(t, "from-main", "rev-parse", "mirror^"), "the first commit's parent is main's head")
	require.Equal(t, mainHead, gitOut(t, "from-main", "rev-parse", "main"), "main did not move")
	require.Contains(t, gitOut(t, "from-main", "show", "mirror:mirror/hand-written/a.yaml"), `v: "1"`,
		"the document main already had is edited where it is")
	_, err = git.Git("from-main", "show", "mirror:mirror/team/configmaps/a.yaml")
	require.Error(t, err, "and not written a second time at its own path")
	require.Contains(t, gitOut(t, "from-main", "show", "mirror:mirror/team/configmaps/b.yaml"), `v: "1"`)
	out, err := git.ReadFile("from-main", "mirror", "outside.txt")
	require.NoError(t, err)
	require.Equal(t, "not the target's\n", out)
	require.Equal(t, "Change 2 objects in team/mirror: 1 created, 1 updated",
		gitOut(t, "from-main", "log", "-1", "--format=%s", "mirror"))
}

func TestTheFirstBranchOfAnEmptyRepositoryIsARootCommit(t *testing.T) {
	_, err := git.CreateBareRepo("empty-mirror")
	require.NoError(t, err)
	w := startWorker(t, "empty-mirror", nil, onBranch("mirror"))
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)
	require.Empty(t, gitOut(t, "empty-mirror", "log", "-1", "--format=%P", "mirror"), "there is nothing to start from")
}

// branchCreator creates the worker's branch at main, as another writer
// would, just before the worker's first commit, and records every request.
type branchCreator struct {
	*gogit.Client
	t        *testing.T
	repo     string
	mu       sync.Mutex
	requests []forges.CommitRequest
}

func (c *branchCreator) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	c.mu.Lock()
	c.requests = append(c.requests, req)
	first := len(c.requests) == 1
	c.mu.Unlock()
	if first {
		gitOut(c.t, c.repo, "update-ref", "refs/heads/"+req.Branch, "main")
	}
	return c.Client.Commit(ctx, req)
}

func TestABranchCreatedByAnotherWriterFirstIsAConflictAndTheWindowReplaysOnIt(t *testing.T) {
	_, err := git.CreateRepoWithCommit("raced-branch", map[string]string{"README.md": "main\n"})
	require.NoError(t, err)
	mainHead := gitOut(t, "raced-branch", "rev-parse", "main")
	creator := &branchCreator{t: t, repo: "raced-branch"}
	w := startWorker(t, "raced-branch", func(f forges.Forge) forges.Forge {
		creator.Client = f.(*gogit.Client)
		return creator
	}, onBranch("mirror"))
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)

	creator.mu.Lock()
	defer creator.mu.Unlock()
	require.Len(t, creator.requests, 2, "one refused attempt, one replay")
	require.Equal(t, []string{"", mainHead}, []string{creator.requests[0].ExpectedHead, creator.requests[0].BaseHead},
		"the first commit requires the branch not to exist and starts it at main")
	require.Equal(t, []string{mainHead, ""}, []string{creator.requests[1].ExpectedHead, creator.requests[1].BaseHead},
		"the replay commits on the branch the other writer made")
	require.Equal(t, mainHead, gitOut(t, "raced-branch", "rev-parse", "mirror^"))
}

// plainForge hides every optional interface of the forge it wraps, as a
// forge that cannot tell its default branch would.
type plainForge struct{ forges.Forge }

func TestAForgeThatCannotTellItsDefaultBranchStartsAnOrphanHistory(t *testing.T) {
	_, err := git.CreateRepoWithCommit("no-default", map[string]string{"mirror/hand-written/a.yaml": existingA})
	require.NoError(t, err)
	w := startWorker(t, "no-default", func(f forges.Forge) forges.Forge { return plainForge{f} }, onBranch("mirror"))
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)
	require.Empty(t, gitOut(t, "no-default", "log", "-1", "--format=%P", "mirror"), "a root commit, as before")
	require.Contains(t, gitOut(t, "no-default", "show", "mirror:mirror/team/configmaps/a.yaml"), `v: "1"`)
}
