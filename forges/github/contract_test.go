package github_test

import (
	"strings"
	"testing"

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
// simulator, authenticated with a token.
func TestForgeContract(t *testing.T) {
	sim := startSim(t)
	forgetest.Run(t, simFixture{sim: sim}, forgetest.Options{})
}

type simFixture struct{ sim *simgithub.Server }

func (f simFixture) NewRepo(t *testing.T, name string, seed map[string]string) forgetest.Repo {
	repo := repoName(t, name)
	require.NoError(t, f.sim.CreateRepo(owner, repo, seed))
	return forgetest.Repo{
		Forge:            newTokenClient(t, f.sim, repo, goodToken),
		WrongCredentials: newTokenClient(t, f.sim, repo, "ghp_wrong"),
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
	}
}

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
