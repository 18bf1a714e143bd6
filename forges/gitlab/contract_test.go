package gitlab_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/configbutler/gitops-reverser/forges/gitlab"
	simgitlab "github.com/configbutler/gitops-reverser/test/sim/gitlab"
)

// TestForgeContract runs the shared forge contract against the GitLab
// simulator, which records the token's user as committer (as GitLab does).
func TestForgeContract(t *testing.T) {
	forgetest.Run(t, newFixture(t), forgetest.Options{
		// GitLab's commits API takes author_name and author_email only
		// (lib/api/commits.rb): the committer is the token's user and both
		// dates are GitLab's clock.
		CommitterIsTokenUser: true, AuthorDateIsServerTime: true,
		// The commits API takes no signature.
		RefusesSigner: true,
	})
}

const (
	testToken  = "glpat-contract"
	wrongToken = "glpat-wrong"
)

func tokenUser() simgitlab.User {
	return simgitlab.User{Username: "gitops-reverser", Name: "GitOps Reverser Bot", Email: "bot@example.com"}
}

type fixture struct {
	server *simgitlab.Server
	repos  *atomic.Int64
}

func newFixture(t *testing.T) fixture {
	server := simgitlab.Start()
	t.Cleanup(server.Close)
	server.AddToken(testToken, tokenUser())
	return fixture{server: server, repos: &atomic.Int64{}}
}

func (f fixture) NewRepo(t *testing.T, name string, seed map[string]string) forgetest.Repo {
	return f.newRepoAt(t, f.newPath(name), seed)
}

// newPath is a project path unique to the fixture.
func (f fixture) newPath(name string) string {
	return fmt.Sprintf("contract/%s-%d", name, f.repos.Add(1))
}

func (f fixture) newRepoAt(t *testing.T, path string, seed map[string]string) forgetest.Repo {
	_, err := f.server.CreateProject(path, seed)
	require.NoError(t, err)
	return forgetest.Repo{
		Forge:            newClient(t, f.server, path, testToken),
		WrongCredentials: newClient(t, f.server, path, wrongToken),
		File: func(t *testing.T, branch, file string) (string, bool) {
			return f.server.File(path, branch, file)
		},
		Head: func(t *testing.T, branch string) forgetest.Commit {
			c, ok := f.server.HeadCommit(path, branch)
			require.True(t, ok, "branch %s exists", branch)
			return forgetest.Commit{ID: c.ID, Message: c.Message, AuthorName: c.AuthorName, AuthorEmail: c.AuthorEmail,
				AuthorDate: c.AuthorDate, CommitterName: c.CommitterName, CommitterEmail: c.CommitterEmail,
				CommitterDate: c.CommitterDate, Parents: c.Parents}
		},
		ExternalCommit: func(t *testing.T, branch, file, content string) {
			_, err := f.server.Commit(path, branch, "external edit\n", map[string]string{file: content})
			require.NoError(t, err)
		},
	}
}

var _ forgetest.RateLimiter = fixture{}

// throttleBudget is how many requests the throttle of LimitWrites allows a
// window: more than a commit costs (head check, tree listing, commit), so
// the retry fits in the window after the wait.
const throttleBudget = 10

// LimitWrites throttles the token's user to throttleBudget requests per
// window of wait and spends this window's budget with r's client's own
// reads, as a worker busy reading would. GitLab's throttle_authenticated_api
// counts every request, so the commit is refused from its first request
// on with 429 and a Retry-After that ends with the window. The throttle is
// lifted when the test ends.
func (f fixture) LimitWrites(t *testing.T, r forgetest.Repo, wait time.Duration) {
	f.server.SetRateLimit(throttleBudget, wait)
	t.Cleanup(func() { f.server.SetRateLimit(0, 0) })
	for range throttleBudget {
		_, err := r.Forge.Head(context.Background(), "main")
		require.NoError(t, err, "a read within the budget is answered")
	}
}

// WaitOut sleeps: the simulator's throttle runs on the wall clock.
func (fixture) WaitOut(t *testing.T, d time.Duration) { time.Sleep(d) }

func newClient(t *testing.T, server *simgitlab.Server, project, token string) *gitlab.Client {
	t.Helper()
	client, err := gitlab.New(gitlab.Options{APIURL: server.APIURL(), Project: project, Token: token})
	require.NoError(t, err)
	return client
}

// projectRequests counts the requests for project since the last reset.
func projectRequests(server *simgitlab.Server, project string) int {
	base := "/projects/" + project
	n := 0
	for _, r := range server.Requests() {
		if r.Path == base || strings.HasPrefix(r.Path, base+"/") {
			n++
		}
	}
	return n
}
