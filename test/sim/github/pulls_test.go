package github_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPullRequestStatusesFollowTheDocs checks the statuses and bodies of
// the pull request endpoints (docs.github.com/rest/pulls/pulls): create
// 201, a second open one for the pair 422 "A pull request already exists
// for OWNER:HEAD.", update-branch 422 on a stale expected_head_sha and 202
// otherwise, merge 409 on a stale sha and 200 after, then state closed and
// merged true.
func TestPullRequestStatusesFollowTheDocs(t *testing.T) {
	s := start(t)
	auth := "token " + token
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a.yaml": "a: 1\n"}))
	main, err := s.HeadCommit("o", "r", "main")
	require.NoError(t, err)
	resp, _ := call(t, s, "POST", "/repos/o/r/git/refs", auth, map[string]any{"ref": "refs/heads/head", "sha": main.SHA})
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	pr := map[string]any{"title": "t", "head": "o:head", "base": "main"}
	resp, body := call(t, s, "POST", "/repos/o/r/pulls", auth, pr)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "no commits between main and head")
	require.Equal(t, "No commits between main and head", body["errors"].([]any)[0].(map[string]any)["message"])

	head, err := s.Commit("o", "r", "head", map[string]string{"b.yaml": "b: 1\n"}, "head")
	require.NoError(t, err)
	resp, body = call(t, s, "POST", "/repos/o/r/pulls", auth, pr)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, float64(1), body["number"])
	require.Equal(t, "open", body["state"])
	require.Equal(t, head, body["head"].(map[string]any)["sha"])

	resp, body = call(t, s, "POST", "/repos/o/r/pulls", auth, pr)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, "Validation Failed", body["message"])
	require.Equal(t, "A pull request already exists for o:head.", body["errors"].([]any)[0].(map[string]any)["message"])

	_, err = s.Commit("o", "r", "main", map[string]string{"c.yaml": "c: 1\n"}, "main moves")
	require.NoError(t, err)
	resp, body = call(t, s, "PUT", "/repos/o/r/pulls/1/update-branch", auth, map[string]any{"expected_head_sha": main.SHA})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, "expected head sha didn't match current head ref.", body["message"])
	resp, body = call(t, s, "PUT", "/repos/o/r/pulls/1/update-branch", auth, map[string]any{"expected_head_sha": head})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Equal(t, "Updating pull request branch.", body["message"])
	merged, err := s.HeadCommit("o", "r", "head")
	require.NoError(t, err)
	require.Len(t, merged.Parents, 2, "the base is merged into the head, not rebased")

	resp, _ = call(t, s, "PUT", "/repos/o/r/pulls/1/merge", auth, map[string]any{"sha": head})
	require.Equal(t, http.StatusConflict, resp.StatusCode, "the head moved since sha")
	resp, body = call(t, s, "PUT", "/repos/o/r/pulls/1/merge", auth, map[string]any{"sha": merged.SHA})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, true, body["merged"])
	resp, body = call(t, s, "GET", "/repos/o/r/pulls/1", auth, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "closed", body["state"])
	require.Equal(t, true, body["merged"])
	resp, _ = call(t, s, "PUT", "/repos/o/r/pulls/1/merge", auth, map[string]any{})
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "a merged pull request cannot be merged again")
}
