package gitlab_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMergeRequestStatusesFollowTheDocs checks the statuses and bodies of
// the merge request endpoints (docs.gitlab.com/api/merge_requests/): create
// 201, a second open one for the pair 409 with GitLab's message array,
// merge 409 on a stale sha, 406 on conflicts, 200, then 405 once merged.
func TestMergeRequestStatusesFollowTheDocs(t *testing.T) {
	s := start(t)
	_, err := s.CreateProject("g/mr", map[string]string{"a.yaml": "a: 1\n"})
	require.NoError(t, err)
	main, ok := s.HeadCommit("g/mr", "main")
	require.True(t, ok)
	created := call(t, s, "POST", "/projects/g%2Fmr/repository/commits", authed(), map[string]any{
		"branch": "head", "start_sha": main.ID, "commit_message": "head",
		"actions": []map[string]any{{"action": "update", "file_path": "a.yaml", "content": "a: head\n"}}})
	require.Equal(t, http.StatusCreated, created.status, string(created.body))
	headSHA := created.json(t)["id"].(string)

	mr := map[string]any{"title": "t", "source_branch": "head", "target_branch": "main"}
	first := call(t, s, "POST", "/projects/g%2Fmr/merge_requests", authed(), mr)
	require.Equal(t, http.StatusCreated, first.status)
	require.Equal(t, float64(1), first.json(t)["iid"])
	require.Equal(t, "opened", first.json(t)["state"])
	require.Equal(t, headSHA, first.json(t)["sha"])

	second := call(t, s, "POST", "/projects/g%2Fmr/merge_requests", authed(), mr)
	require.Equal(t, http.StatusConflict, second.status)
	require.Equal(t, []any{"Another open merge request already exists for this source branch: !1"}, second.json(t)["message"])

	require.Equal(t, "mergeable", first.json(t)["detailed_merge_status"])
	require.Equal(t, false, first.json(t)["has_conflicts"])

	_, err = s.Commit("g/mr", "main", "a human edits a.yaml on main", map[string]string{"a.yaml": "a: human\n"})
	require.NoError(t, err)
	status := call(t, s, "GET", "/projects/g%2Fmr/merge_requests/1", authed(), nil).json(t)
	require.Equal(t, "conflict", status["detailed_merge_status"], "detailed_merge_status says a conflict")
	require.Equal(t, true, status["has_conflicts"])
	require.Equal(t, "cannot_be_merged", status["merge_status"])
	conflicting := call(t, s, "PUT", "/projects/g%2Fmr/merge_requests/1/merge", authed(), map[string]any{"sha": headSHA})
	require.Equal(t, http.StatusNotAcceptable, conflicting.status, "both changed a.yaml")
	require.Equal(t, "Branch cannot be merged", conflicting.message(t))

	s2 := call(t, s, "PUT", "/projects/g%2Fmr/merge_requests/1/merge", authed(), map[string]any{"sha": main.ID})
	require.Equal(t, http.StatusConflict, s2.status)
	require.Equal(t, "SHA does not match HEAD of source branch: "+headSHA, s2.message(t))

	closed := call(t, s, "PUT", "/projects/g%2Fmr/merge_requests/1", authed(), map[string]any{"state_event": "close"})
	require.Equal(t, http.StatusOK, closed.status)
	require.Equal(t, "closed", closed.json(t)["state"])
	again := call(t, s, "PUT", "/projects/g%2Fmr/merge_requests/1/merge", authed(), map[string]any{})
	require.Equal(t, http.StatusMethodNotAllowed, again.status, "a closed merge request cannot be merged")
}
