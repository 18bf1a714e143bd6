package gitlab_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/configbutler/gitops-reverser/forges"
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

// TestMergeRequestLifecycle: the first change opens the merge request; an
// open of the same pair answers 409 and finds it instead of making a
// second; the description is edited; a reviewer merges it; it reads
// merged and is no longer found.
func TestMergeRequestLifecycle(t *testing.T) {
	server := startServer(t)
	path, client, headCommit := mergeRequestProject(t, server)
	ctx := context.Background()

	_, err := client.FindPullRequest(ctx, headBranch, "main")
	require.ErrorIs(t, err, forges.ErrNotFound)

	opened, created, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror", Body: "1 created"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, forges.PullRequest{Number: 1, URL: server.URL() + "/" + path + "/-/merge_requests/1", State: forges.PullRequestOpen,
		Head: headBranch, Base: "main", HeadCommit: headCommit, Title: "Mirror", Body: "1 created"}, opened)
	require.Equal(t, opened.URL, client.PullRequestURL(1))

	again, created, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Other"})
	require.NoError(t, err)
	require.False(t, created, "409: the open merge request is returned, not duplicated")
	require.Equal(t, opened, again)

	edited, err := client.EditPullRequest(ctx, 1, forges.PullRequestOptions{Title: "Mirror", Body: "2 created"})
	require.NoError(t, err)
	require.Equal(t, "2 created", edited.Body)

	_, _, err = reviewer(t, server).MergeRequests.AcceptMergeRequest(path, 1, &gl.AcceptMergeRequestOptions{SHA: new(headCommit)})
	require.NoError(t, err)
	merged, err := client.PullRequest(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, forges.PullRequestMerged, merged.State)
	content, ok := server.File(path, "main", "apps/cm.yaml")
	require.True(t, ok)
	require.Equal(t, "a: 1\n", content)
	_, err = client.FindPullRequest(ctx, headBranch, "main")
	require.ErrorIs(t, err, forges.ErrNotFound, "a merged merge request is not the open one")
}

func TestAClosedMergeRequestReadsClosed(t *testing.T) {
	server := startServer(t)
	path, client, _ := mergeRequestProject(t, server)
	ctx := context.Background()
	opened, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror"})
	require.NoError(t, err)

	_, _, err = reviewer(t, server).MergeRequests.UpdateMergeRequest(path, opened.Number, &gl.UpdateMergeRequestOptions{StateEvent: new("close")})
	require.NoError(t, err)
	closed, err := client.PullRequest(ctx, opened.Number)
	require.NoError(t, err)
	require.Equal(t, forges.PullRequestClosed, closed.State)
	_, err = client.FindPullRequest(ctx, headBranch, "main")
	require.ErrorIs(t, err, forges.ErrNotFound)

	_, _, err = client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: "no-such-branch", Base: "main", Title: "x"})
	require.ErrorIs(t, err, forges.ErrNotFound)
	_, err = client.PullRequest(ctx, 42)
	require.ErrorIs(t, err, forges.ErrNotFound)
}

// TestAMergeRequestUpdateCostsTheCommitAndOneRequest counts the requests
// of an update: GitLab's commit (the head check and the POST) and one PUT
// of the description. GitLab has no BaseMerger (see pulls.go).
func TestAMergeRequestUpdateCostsTheCommitAndOneRequest(t *testing.T) {
	server := startServer(t)
	path, client, headCommit := mergeRequestProject(t, server)
	ctx := context.Background()
	var _ forges.PullRequester = client
	_, isMerger := any(client).(forges.BaseMerger)
	require.False(t, isMerger, "GitLab's only server-side update is a rebase, which rewrites the head")

	opened, _, err := client.OpenPullRequest(ctx, forges.PullRequestOptions{Head: headBranch, Base: "main", Title: "Mirror"})
	require.NoError(t, err)
	for i := 1; i <= 10; i++ {
		server.ResetRequests()
		result, err := client.Commit(ctx, request(headBranch, headCommit, put(fmt.Sprintf("apps/cm-%d.yaml", i), "n: 1\n")))
		require.NoError(t, err)
		headCommit = result.Commit
		_, err = client.EditPullRequest(ctx, opened.Number, forges.PullRequestOptions{Title: "Mirror", Body: fmt.Sprintf("%d created", i+1)})
		require.NoError(t, err)
		var made []string
		for _, r := range server.Requests() {
			made = append(made, r.Method+" "+strings.TrimPrefix(r.Path, "/projects/"+path+"/"))
		}
		require.Equal(t, []string{"GET repository/branches/" + headBranch, "POST repository/commits", "PUT merge_requests/1"}, made)
	}
	all, _, err := reviewer(t, server).MergeRequests.ListProjectMergeRequests(path, &gl.ListProjectMergeRequestsOptions{State: new("all")})
	require.NoError(t, err)
	require.Len(t, all, 1, "ten updates, one merge request")
}
