package github_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
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

// TestMergeableIsNullUntilTheJobRan: "If the value is null, then GitHub
// has started a background job to compute the mergeability"; the next
// answer carries it, and a move of the base or the head starts it again.
// The list ("pull-request-simple") has no mergeable. A merge commit with
// two parents and base_tree is accepted as "Create a commit" documents.
func TestMergeableIsNullUntilTheJobRan(t *testing.T) {
	s := start(t)
	auth := "token " + token
	head, body := openConflictProneRequest(t, s)
	require.Nil(t, body["mergeable"], "the job starts")
	_, body = call(t, s, "GET", "/repos/o/r/pulls/1", auth, nil)
	require.Equal(t, true, body["mergeable"])
	require.Equal(t, "clean", body["mergeable_state"])

	base, err := s.Commit("o", "r", "main", map[string]string{"a.yaml": "a: main\n"}, "main changes the head's file")
	require.NoError(t, err)
	_, body = call(t, s, "GET", "/repos/o/r/pulls/1", auth, nil)
	require.Nil(t, body["mergeable"], "the base moved: the job starts again")
	_, body = call(t, s, "GET", "/repos/o/r/pulls/1", auth, nil)
	require.Equal(t, false, body["mergeable"])
	require.Equal(t, "dirty", body["mergeable_state"])
	req, err := http.NewRequest(http.MethodGet, s.URL()+"/repos/o/r/pulls", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	listed, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer listed.Body.Close()
	var list []map[string]any
	require.NoError(t, json.NewDecoder(listed.Body).Decode(&list))
	require.NotContains(t, list[0], "mergeable")

	baseCommit, err := s.HeadCommit("o", "r", "main")
	require.NoError(t, err)
	require.Equal(t, base, baseCommit.SHA)
	_, tree := call(t, s, "POST", "/repos/o/r/git/trees", auth, map[string]any{"base_tree": baseCommit.Tree,
		"tree": []map[string]any{{"path": "a.yaml", "mode": "100644", "type": "blob", "content": "a: both\n"}}})
	resp, commit := call(t, s, "POST", "/repos/o/r/git/commits", auth, map[string]any{"message": "fresh from main",
		"tree": tree["sha"], "parents": []string{head, base}})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Len(t, commit["parents"], 2, "a merge commit keeps both parents, in order")
	resp, _ = call(t, s, "PATCH", "/repos/o/r/git/refs/heads/head", auth, map[string]any{"sha": commit["sha"], "force": false})
	require.Equal(t, http.StatusOK, resp.StatusCode, "the head is an ancestor of the merge: a fast forward")
	call(t, s, "GET", "/repos/o/r/pulls/1", auth, nil)
	_, body = call(t, s, "GET", "/repos/o/r/pulls/1", auth, nil)
	require.Equal(t, true, body["mergeable"], "the head has the base now")
}

// TestMergeableAtOnce: with the job done before the first answer, the
// pull request is never null while it is open.
func TestMergeableAtOnce(t *testing.T) {
	s := start(t, simgithub.WithMergeableAtOnce())
	auth := "token " + token
	_, body := openConflictProneRequest(t, s)
	require.Equal(t, true, body["mergeable"])
	_, err := s.Commit("o", "r", "main", map[string]string{"a.yaml": "a: main\n"}, "main changes the head's file")
	require.NoError(t, err)
	_, body = call(t, s, "GET", "/repos/o/r/pulls/1", auth, nil)
	require.Equal(t, false, body["mergeable"])
}

// openConflictProneRequest makes repository o/r whose branch head changes
// a.yaml, the file main's next commit may change too, opens pull request
// #1 from it into main, and returns the head commit and the create's
// answer.
func openConflictProneRequest(t *testing.T, s *simgithub.Server) (string, map[string]any) {
	t.Helper()
	auth := "token " + token
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a.yaml": "a: 1\n"}))
	main, err := s.HeadCommit("o", "r", "main")
	require.NoError(t, err)
	resp, _ := call(t, s, "POST", "/repos/o/r/git/refs", auth, map[string]any{"ref": "refs/heads/head", "sha": main.SHA})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	head, err := s.Commit("o", "r", "head", map[string]string{"a.yaml": "a: head\n"}, "head")
	require.NoError(t, err)
	resp, body := call(t, s, "POST", "/repos/o/r/pulls", auth, map[string]any{"title": "t", "head": "o:head", "base": "main"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	return head, body
}
