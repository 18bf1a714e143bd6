package gitlab_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/configbutler/gitops-reverser/forges/gitlab"
	"github.com/configbutler/gitops-reverser/gitfile"
	simgitlab "github.com/configbutler/gitops-reverser/test/sim/gitlab"
)

const headBranch = "gitops-reverser/mirror"

// reviewer is someone on GitLab merging or closing the merge request: a
// plain client-go client on the simulator, not the client under test.
func reviewer(t *testing.T, server *simgitlab.Server) *gl.Client {
	t.Helper()
	client, err := gl.NewClient(testToken, gl.WithBaseURL(server.APIURL()), gl.WithoutRetries())
	require.NoError(t, err)
	return client
}

// mergeRequestProject creates a project with main and a head branch one
// commit ahead, and returns its path, a client and the head commit.
func mergeRequestProject(t *testing.T, server *simgitlab.Server) (string, *gitlab.Client, string) {
	t.Helper()
	path := "g/" + strings.ToLower(t.Name())
	_, err := server.CreateProject(path, map[string]string{"README.md": "hello\n"})
	require.NoError(t, err)
	client := newClient(t, server, path, testToken)
	result, err := client.Commit(context.Background(), forges.CommitRequest{Branch: headBranch, BaseHead: head(t, client, "main"),
		Message: "mirror\n", Author: author(), Changes: []gitfile.Change{put("apps/cm.yaml", "a: 1\n")}})
	require.NoError(t, err)
	return path, client, result.Commit
}

// TestPullRequestContract runs the shared pull request contract against
// the simulator's merge requests. GitLab has no forges.BaseMerger, so its
// MergeBaseIntoHead case is skipped.
func TestPullRequestContract(t *testing.T) {
	forgetest.RunPullRequests(t, newFixture(t))
}

// NewPullRepo is NewRepo with a reviewer on GitLab: a plain client-go
// client that merges (PUT merge_requests/:iid/merge) and closes
// (state_event close).
func (f fixture) NewPullRepo(t *testing.T, name string, seed map[string]string) forgetest.PullRepo {
	path := f.newPath(name)
	return forgetest.PullRepo{
		Repo: f.newRepoAt(t, path, seed),
		Merge: func(t *testing.T, number int64) {
			_, _, err := reviewer(t, f.server).MergeRequests.AcceptMergeRequest(path, number, nil)
			require.NoError(t, err)
		},
		Close: func(t *testing.T, number int64) {
			_, _, err := reviewer(t, f.server).MergeRequests.UpdateMergeRequest(path, number,
				&gl.UpdateMergeRequestOptions{StateEvent: new("close")})
			require.NoError(t, err)
		},
	}
}

// TestAMergeRequestUpdateCostsTheCommitAndOneRequest counts the requests
// of an update: GitLab's commit (the head check and the POST) and one PUT
// of the description; and of the other operations: open one (two for a
// duplicate), find one, read one. GitLab has no BaseMerger (see pulls.go).
func TestAMergeRequestUpdateCostsTheCommitAndOneRequest(t *testing.T) {
	server := startServer(t)
	path, client, headCommit := mergeRequestProject(t, server)
	ctx := context.Background()
	var _ forges.PullRequester = client
	_, isMerger := any(client).(forges.BaseMerger)
	require.False(t, isMerger, "GitLab's only server-side update is a rebase, which rewrites the head")

	made := func(op func()) []string {
		server.ResetRequests()
		op()
		var made []string
		for _, r := range server.Requests() {
			made = append(made, r.Method+" "+strings.TrimPrefix(r.Path, "/projects/"+path+"/"))
		}
		return made
	}
	var opened forges.PullRequest
	require.Equal(t, []string{"POST merge_requests"}, made(func() {
		var err error
		opened, _, err = client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror"})
		require.NoError(t, err)
	}))
	require.Equal(t, []string{"POST merge_requests", "GET merge_requests"}, made(func() {
		_, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror"})
		require.NoError(t, err)
	}), "a duplicate: the refused create, then the find")
	require.Equal(t, []string{"GET merge_requests"}, made(func() {
		_, err := client.FindPullRequest(ctx, headBranch, "main")
		require.NoError(t, err)
	}))
	require.Equal(t, []string{"GET merge_requests/1"}, made(func() {
		_, err := client.PullRequest(ctx, 1)
		require.NoError(t, err)
	}))
	for i := 1; i <= 10; i++ {
		require.Equal(t, []string{"GET repository/branches/" + headBranch, "POST repository/commits", "PUT merge_requests/1"}, made(func() {
			result, err := client.Commit(ctx, request(headBranch, headCommit, put(fmt.Sprintf("apps/cm-%d.yaml", i), "n: 1\n")))
			require.NoError(t, err)
			headCommit = result.Commit
			_, err = client.EditPullRequest(ctx, opened.Number, forges.PullRequestOptions{Title: "Mirror", Body: fmt.Sprintf("%d created", i+1)})
			require.NoError(t, err)
		}))
	}
	all, _, err := reviewer(t, server).MergeRequests.ListProjectMergeRequests(path, &gl.ListProjectMergeRequestsOptions{State: new("all")})
	require.NoError(t, err)
	require.Len(t, all, 1, "ten updates, one merge request")
}

// TestAMergeParentCommitIsRefusedSendingNothing: GitLab's commits API makes
// commits of one parent, so a merge-parent commit is refused before any
// request, and the executor commits on the old head instead.
func TestAMergeParentCommitIsRefusedSendingNothing(t *testing.T) {
	server := startServer(t)
	_, client, headCommit := mergeRequestProject(t, server)
	require.False(t, forges.CommitsMergeParent(client))
	base := head(t, client, "main")
	server.ResetRequests()
	_, err := client.Commit(context.Background(), forges.CommitRequest{Branch: headBranch, ExpectedHead: headCommit,
		MergeParent: base, Message: "fresh\n", Author: author(), Changes: []gitfile.Change{put("apps/cm.yaml", "a: 2\n")}})
	require.ErrorIs(t, err, forges.ErrMergeParentUnsupported)
	require.Empty(t, server.Requests(), "the commit sent nothing")
}
