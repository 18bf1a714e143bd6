package github_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges/forgetest"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

const (
	owner     = "configbutler"
	goodToken = "ghp_good"
)

// TestForgeContract runs the shared forge contract against the GitHub
// simulator, authenticated with a token. The simulator and the clients
// measure rate limits on one skippable clock, so a rate-limit wait passes
// without sleeping.
func TestForgeContract(t *testing.T) {
	clock := &skippableClock{}
	sim := startSim(t, simgithub.WithClock(clock.Now))
	forgetest.Run(t, simFixture{sim: sim, clock: clock}, forgetest.Options{})
}

type simFixture struct {
	sim   *simgithub.Server
	clock *skippableClock
}

var _ forgetest.RateLimiter = simFixture{}

func (f simFixture) NewRepo(t *testing.T, name string, seed map[string]string) forgetest.Repo {
	repo := repoName(t, name)
	require.NoError(t, f.sim.CreateRepo(owner, repo, seed))
	onFixtureClock := func(o *forgegithub.Options) { o.Now = f.clock.Now }
	return forgetest.Repo{
		Forge:            newTokenClient(t, f.sim, repo, goodToken, onFixtureClock),
		WrongCredentials: newTokenClient(t, f.sim, repo, "ghp_wrong", onFixtureClock),
		File: func(t *testing.T, branch, path string) (string, bool) {
			return f.sim.File(owner, repo, branch, path)
		},
		Head: func(t *testing.T, branch string) forgetest.Commit {
			head, err := f.sim.HeadCommit(owner, repo, branch)
			require.NoError(t, err)
			return forgetest.Commit{
				ID: head.SHA, Message: head.Message, Parents: head.Parents,
				AuthorName: head.Author.Name, AuthorEmail: head.Author.Email, AuthorDate: head.Author.When,
				CommitterName: head.Committer.Name, CommitterEmail: head.Committer.Email, CommitterDate: head.Committer.When,
			}
		},
		ExternalCommit: func(t *testing.T, branch, path, content string) {
			_, err := f.sim.Commit(owner, repo, branch, map[string]string{path: content}, "external edit")
			require.NoError(t, err)
		},
		CommitObject: func(t *testing.T, id string) []byte {
			raw, err := f.sim.CommitObject(owner, repo, id)
			require.NoError(t, err)
			return raw
		},
	}
}

// LimitWrites trips a secondary rate limit on content creation, the one a
// committing client meets: GitHub answers its writes 403 with retry-after
// while its reads go on. The limit is the whole simulator's; the contract
// writes to one repository at a time.
func (f simFixture) LimitWrites(t *testing.T, _ forgetest.Repo, wait time.Duration) {
	f.sim.BlockContentCreation(wait)
}

// WaitOut skips the shared clock ahead: the simulator lifts the limit and
// the client stops holding its writes back, both at once.
func (f simFixture) WaitOut(t *testing.T, d time.Duration) { f.clock.Skip(d) }

// skippableClock is the wall clock plus an offset that only grows, so
// every other case runs on real time while a rate-limit wait can pass at
// once. simgithub.Clock stands still, which would pile all of the
// contract's writes into one content-creation window.
type skippableClock struct{ skipped atomic.Int64 }

func (c *skippableClock) Now() time.Time {
	return time.Now().Add(time.Duration(c.skipped.Load()))
}

func (c *skippableClock) Skip(d time.Duration) { c.skipped.Add(int64(d)) }

func startSim(t *testing.T, opts ...simgithub.Option) *simgithub.Server {
	t.Helper()
	sim := simgithub.Start(opts...)
	t.Cleanup(sim.Close)
	sim.AddToken(goodToken)
	return sim
}

// repoName is a repository name unique to the test.
func repoName(t *testing.T, name string) string {
	return strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()) + "-" + name
}

func newTokenClient(t *testing.T, sim *simgithub.Server, repo, token string, opts ...func(*forgegithub.Options)) *forgegithub.Client {
	t.Helper()
	options := forgegithub.Options{Owner: owner, Repo: repo, APIURL: sim.URL(), Token: token}
	for _, opt := range opts {
		opt(&options)
	}
	client, err := forgegithub.New(options)
	require.NoError(t, err)
	return client
}

// tokenRepo creates a repository named for the test, seeded with the files,
// and returns its name and a client on it with the good token.
func tokenRepo(t *testing.T, sim *simgithub.Server, seed map[string]string, opts ...func(*forgegithub.Options)) (string, *forgegithub.Client) {
	t.Helper()
	repo := repoName(t, "r")
	require.NoError(t, sim.CreateRepo(owner, repo, seed))
	return repo, newTokenClient(t, sim, repo, goodToken, opts...)
}

// mainHead is the head of main as the client reads it.
func mainHead(t *testing.T, client *forgegithub.Client) string {
	t.Helper()
	head, err := client.Head(context.Background(), "main")
	require.NoError(t, err)
	return head
}
