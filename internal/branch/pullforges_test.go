package branch_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"
	gl "gitlab.com/gitlab-org/api/client-go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/forges"
	forgegitea "github.com/configbutler/gitops-reverser/forges/gitea"
	forgegitlab "github.com/configbutler/gitops-reverser/forges/gitlab"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/test/harness"
	simgitlab "github.com/configbutler/gitops-reverser/test/sim/gitlab"
)

// pullForge is a forge with pull requests as the tests below drive it:
// the client under test, and a reviewer on the forge (its own API, not
// the client) that merges and lists.
type pullForge struct {
	forge forges.Forge
	name  string
	merge func(t *testing.T, number int64)
	// open is how many pull requests from the head are open.
	open func(t *testing.T) int
	file func(t *testing.T, branch, path string) string
}

// runPullLifecycle is the lifecycle every forge with pull requests goes
// through: the first change opens one, ten more update it, a merge is
// followed by a new one whose merge leaves the base's own content alone.
func runPullLifecycle(t *testing.T, f pullForge) {
	r := startPR(t, f.forge, f.name)
	first := r.change(t, cm("a", "0")).PullRequest
	require.True(t, first.Supported)
	require.NotZero(t, first.Number)
	require.NoError(t, first.Err)
	for i := 1; i <= 10; i++ {
		start := time.Now()
		o := r.change(t, cm("a", fmt.Sprint(i)))
		t.Logf("update %d took %s", i, time.Since(start))
		require.Equal(t, first.Number, o.PullRequest.Number)
		require.NoError(t, o.PullRequest.Err)
	}
	require.Equal(t, 1, f.open(t), "one pull request")

	f.merge(t, first.Number)
	o := r.change(t, cm("b", "1"))
	require.True(t, o.Rebuild)
	o = r.rebuild(t, o, cm("a", "10"), cm("b", "1"))
	require.NotEqual(t, first.Number, o.PullRequest.Number)
	require.NotZero(t, o.PullRequest.Number)
	require.Equal(t, 1, f.open(t))
	f.merge(t, o.PullRequest.Number)
	require.Equal(t, "base 1\n", f.file(t, prBase, prOutside))
	require.Contains(t, f.file(t, prBase, "mirror/team/configmaps/a.yaml"), `v: "10"`)
	require.Contains(t, f.file(t, prBase, "mirror/team/configmaps/b.yaml"), `v: "1"`)
}

const glToken = "glpat-branch"

// gitlabProject starts the GitLab simulator with project seeded, and a
// client on it.
func gitlabProject(t *testing.T, project string) (*simgitlab.Server, *forgegitlab.Client) {
	t.Helper()
	server := simgitlab.Start()
	t.Cleanup(server.Close)
	server.AddToken(glToken, simgitlab.User{Username: "gitops-reverser", Name: "GitOps Reverser Bot", Email: "bot@example.com"})
	_, err := server.CreateProject(project, map[string]string{"README.md": "hello\n", prOutside: "base 1\n"})
	require.NoError(t, err)
	client, err := forgegitlab.New(forgegitlab.Options{APIURL: server.APIURL(), Project: project, Token: glToken})
	require.NoError(t, err)
	return server, client
}

func TestPullRequestModeOnTheGitLabSimulator(t *testing.T) {
	project := "g/lifecycle"
	server, client := gitlabProject(t, project)
	reviewer, err := gl.NewClient(glToken, gl.WithBaseURL(server.APIURL()), gl.WithoutRetries())
	require.NoError(t, err)
	runPullLifecycle(t, pullForge{forge: client, name: "gitlab",
		merge: func(t *testing.T, number int64) {
			_, _, err := reviewer.MergeRequests.AcceptMergeRequest(project, number, nil)
			require.NoError(t, err)
		},
		open: func(t *testing.T) int {
			mrs, _, err := reviewer.MergeRequests.ListProjectMergeRequests(project, &gl.ListProjectMergeRequestsOptions{
				State: new("opened"), SourceBranch: new(prHead)})
			require.NoError(t, err)
			return len(mrs)
		},
		file: func(t *testing.T, branch, path string) string {
			content, _ := server.File(project, branch, path)
			return content
		},
	})
}

// TestABaseThatConflictsIsFlaggedOnGitLab: GitLab can neither merge the
// target into the source nor make a merge commit through its API, so a
// conflicting target is left to a human, and commits go on to the head.
func TestABaseThatConflictsIsFlaggedOnGitLab(t *testing.T) {
	project := "g/conflict"
	server, client := gitlabProject(t, project)
	r := startPR(t, client, "gitlab-conflict")
	r.change(t, cm("a", "1"))
	_, err := server.Commit(project, prBase, "someone else", map[string]string{
		"mirror/team/configmaps/a.yaml": string(cm("a", "someone else's").YAML)})
	require.NoError(t, err)
	o := r.change(t, cm("b", "1"))
	require.True(t, o.PullRequest.Conflict, "a human resolves it")
	require.False(t, o.Rebuild)
	require.NotEmpty(t, o.PullRequest.Note)
	o = r.change(t, cm("c", "1"))
	require.Contains(t, mustFile(t, server, project, prHead, "mirror/team/configmaps/c.yaml"), `v: "1"`, "commits go on")
	require.True(t, o.PullRequest.Conflict)
}

func mustFile(t *testing.T, server *simgitlab.Server, project, branch, path string) string {
	t.Helper()
	content, ok := server.File(project, branch, path)
	require.True(t, ok, "%s on %s", path, branch)
	return content
}

// giteaRepo starts a real Gitea with a repository whose main holds
// prOutside, and a client on it that pushes over git, as the operator
// configures Gitea.
func giteaRepo(t *testing.T, name string) (*harness.Gitea, string, *forgegitea.Client) {
	t.Helper()
	server, err := harness.StartGitea(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	created, err := server.CreateRepo(name, false)
	require.NoError(t, err)
	repo := created.Name
	giteaCommit(t, server, repo, "create", prOutside, "base 1\n")
	opts := forgegitea.Options{BaseURL: server.URL(), Owner: server.AdminUser(), Repo: repo, Token: server.Token()}
	cloneURL, err := forgegitea.CloneURL(opts)
	require.NoError(t, err)
	opts.Pusher, err = gogit.New(gogit.Options{URL: cloneURL, Auth: gogit.BasicAuth{Username: "git", Password: server.Token()}})
	require.NoError(t, err)
	client, err := forgegitea.New(opts)
	require.NoError(t, err)
	return server, repo, client
}

// giteaCommit is someone else's commit on the base, through Gitea's API.
func giteaCommit(t *testing.T, server *harness.Gitea, repo, operation, path, content string) {
	t.Helper()
	_, resp, err := server.Client().ChangeFiles(server.AdminUser(), repo, gitea.ChangeFilesOptions{Branch: prBase, Message: "someone else",
		Files: []*gitea.ChangeFileOperation{{Operation: operation, Path: path, Content: b64(content)}}})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}

func giteaFile(t *testing.T, server *harness.Gitea, repo, branch, path string) string {
	t.Helper()
	raw, _, err := server.Client().GetFile(server.AdminUser(), repo, branch, path)
	require.NoError(t, err)
	return string(raw)
}

func TestPullRequestModeOnGitea(t *testing.T) {
	server, repo, client := giteaRepo(t, "lifecycle")
	admin := server.Client()
	runPullLifecycle(t, pullForge{forge: client, name: "gitea",
		merge: func(t *testing.T, number int64) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			require.NoError(t, server.MergePullRequest(ctx, server.AdminUser(), repo, number))
		},
		open: func(t *testing.T) int {
			prs, _, err := admin.ListRepoPullRequests(server.AdminUser(), repo, gitea.ListPullRequestsOptions{State: gitea.StateOpen})
			require.NoError(t, err)
			return len(prs)
		},
		file: func(t *testing.T, branch, path string) string { return giteaFile(t, server, repo, branch, path) },
	})
}

// TestABaseThatConflictsIsRebuiltOnGitea: someone changes a mirrored file
// on the base of an open pull request on a real Gitea. Gitea's pull update
// (the BaseMerger) refuses the merge with a conflict, so the head is
// rebuilt on the base: a merge commit pushed with the compare-and-swap,
// whose tree is the base's with the cluster's state written over it. The
// base's other content is kept and the pull request says what happened.
//
// Gitea computes mergeability in the background: when the update's own
// request comes before it has, the worker's quiet read a minute later
// (stepped on a fake clock) sees the conflict.
func TestABaseThatConflictsIsRebuiltOnGitea(t *testing.T) {
	server, repo, client := giteaRepo(t, "conflict")
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := startPRWith(t, client, "gitea-conflict", func(c *branch.Config) { c.Clock = clock })
	number := r.change(t, cm("a", "1")).PullRequest.Number
	require.NotZero(t, number)
	giteaCommit(t, server, repo, "update", prOutside, "base 2\n")
	giteaCommit(t, server, repo, "create", "mirror/team/configmaps/a.yaml", string(cm("a", "someone else's").YAML))

	o := r.change(t, cm("b", "1"))
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.After(3 * time.Minute)
	for !o.Rebuild {
		select {
		case o = <-r.outcomes:
		case <-ticker.C:
			clock.Step(10 * time.Second)
		case <-deadline:
			t.Fatal("the conflict was never seen")
		}
	}
	require.Equal(t, number, o.PullRequest.Number, "the same pull request")
	o = r.rebuild(t, o, cm("a", "1"), cm("b", "1"))
	require.Equal(t, number, o.PullRequest.Number)
	require.False(t, o.PullRequest.Conflict)

	base, _, err := server.Client().GetRepoBranch(server.AdminUser(), repo, prBase)
	require.NoError(t, err)
	commit, _, err := server.Client().GetSingleCommit(server.AdminUser(), repo, prHead)
	require.NoError(t, err)
	var parents []string
	for _, p := range commit.Parents {
		parents = append(parents, p.SHA)
	}
	require.Contains(t, parents, base.Commit.ID, "the base is a parent of the rebuilt head: a fast-forward, no force-push")
	require.Equal(t, "base 2\n", giteaFile(t, server, repo, prHead, prOutside), "the base's own content kept")
	require.Contains(t, giteaFile(t, server, repo, prHead, "mirror/team/configmaps/a.yaml"), `v: "1"`, "the cluster's state")
	pr, _, err := server.Client().GetPullRequest(server.AdminUser(), repo, number)
	require.NoError(t, err)
	require.Contains(t, pr.Body, "rebuilt on the base", "the pull request says what happened")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, server.MergePullRequest(ctx, server.AdminUser(), repo, number))
	require.Equal(t, "base 2\n", giteaFile(t, server, repo, prBase, prOutside))
	require.Contains(t, giteaFile(t, server, repo, prBase, "mirror/team/configmaps/a.yaml"), `v: "1"`)
}

func b64(content string) string { return base64.StdEncoding.EncodeToString([]byte(content)) }
