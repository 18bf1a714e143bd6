package gitlab_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/sim/gitlab"
)

const token = "glpat-test"

func bot() gitlab.User {
	return gitlab.User{Username: "mirror-bot", Name: "Mirror Bot", Email: "bot@example.com"}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(r.body, &out), string(r.body))
	return out
}

func (r response) message(t *testing.T) string {
	t.Helper()
	return r.json(t)["message"].(string)
}

func call(t *testing.T, s *gitlab.Server, method, path string, header http.Header, body any) response {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.APIURL()+path, reader)
	require.NoError(t, err)
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func authed() http.Header { return http.Header{"Private-Token": {token}} }

func start(t *testing.T) *gitlab.Server {
	t.Helper()
	s := gitlab.Start()
	t.Cleanup(s.Close)
	s.AddToken(token, bot())
	return s
}

func project(path string) string { return "/projects/" + url.PathEscape(path) }

func commitBody(branch string, actions ...map[string]any) map[string]any {
	return map[string]any{"branch": branch, "commit_message": "test\n", "actions": actions,
		"author_name": "Alice", "author_email": "alice@example.com"}
}

func action(kind, path, content, lastCommitID string) map[string]any {
	a := map[string]any{"action": kind, "file_path": path}
	if kind != "delete" {
		a["content"] = content
	}
	if lastCommitID != "" {
		a["last_commit_id"] = lastCommitID
	}
	return a
}

func TestCommitsBuildRealGitObjects(t *testing.T) {
	s := start(t)
	_, err := s.CreateProject("group/repo", map[string]string{"a.yaml": "a: 1\n", "gone.yaml": "x\n"})
	require.NoError(t, err)
	seed, _ := s.HeadCommit("group/repo", "main")

	resp := call(t, s, http.MethodPost, project("group/repo")+"/repository/commits", authed(), commitBody("main",
		action("update", "a.yaml", "a: 2\n", seed.ID), action("create", "dir/b.yaml", "b: 1\n", ""),
		action("delete", "gone.yaml", "", seed.ID)))
	require.Equal(t, http.StatusCreated, resp.status, string(resp.body))
	created := resp.json(t)
	require.Equal(t, []any{seed.ID}, created["parent_ids"])

	head, ok := s.HeadCommit("group/repo", "main")
	require.True(t, ok)
	require.Equal(t, created["id"], head.ID)
	require.Equal(t, "Alice", head.AuthorName, "author from author_name")
	require.Equal(t, "Mirror Bot", head.CommitterName, "committer is the token's user")
	require.Equal(t, "bot@example.com", head.CommitterEmail)
	content, ok := s.File("group/repo", "main", "a.yaml")
	require.True(t, ok)
	require.Equal(t, "a: 2\n", content)
	_, ok = s.File("group/repo", "main", "gone.yaml")
	require.False(t, ok)

	tree := call(t, s, http.MethodGet, project("group/repo")+"/repository/tree?recursive=true&ref="+head.ID, authed(), nil)
	require.Equal(t, http.StatusOK, tree.status)
	var nodes []map[string]string
	require.NoError(t, json.Unmarshal(tree.body, &nodes))
	blobs := map[string]string{}
	for _, n := range nodes {
		if n["type"] == "blob" {
			blobs[n["path"]] = n["id"]
		}
	}
	wantID := plumbing.ComputeHash(plumbing.BlobObject, []byte("b: 1\n")).String()
	require.Equal(t, map[string]string{"a.yaml": plumbing.ComputeHash(plumbing.BlobObject, []byte("a: 2\n")).String(),
		"dir/b.yaml": wantID}, blobs, "tree ids are Git's")
	raw := call(t, s, http.MethodGet, project("group/repo")+"/repository/blobs/"+wantID+"/raw", authed(), nil)
	require.Equal(t, "b: 1\n", string(raw.body))
}

// GitLab checks last_commit_id against the file's history, not the head:
// a file unchanged since the named commit passes even though the branch
// moved, a file changed since is refused.
func TestLastCommitIDRefusesOnlyFilesChangedSince(t *testing.T) {
	s := start(t)
	_, err := s.CreateProject("g/r", map[string]string{"ours.yaml": "1\n", "theirs.yaml": "1\n"})
	require.NoError(t, err)
	seed, _ := s.HeadCommit("g/r", "main")
	_, err = s.Commit("g/r", "main", "external\n", map[string]string{"theirs.yaml": "2\n"})
	require.NoError(t, err)

	resp := call(t, s, http.MethodPost, project("g/r")+"/repository/commits", authed(),
		commitBody("main", action("update", "theirs.yaml", "3\n", seed.ID)))
	require.Equal(t, http.StatusBadRequest, resp.status)
	require.Equal(t, "The file has changed since you started editing it: theirs.yaml", resp.message(t))
	resp = call(t, s, http.MethodPost, project("g/r")+"/repository/commits", authed(),
		commitBody("main", action("delete", "theirs.yaml", "", seed.ID)))
	require.Equal(t, http.StatusBadRequest, resp.status, "deletes are checked too")

	resp = call(t, s, http.MethodPost, project("g/r")+"/repository/commits", authed(),
		commitBody("main", action("update", "ours.yaml", "2\n", seed.ID)))
	require.Equal(t, http.StatusCreated, resp.status, string(resp.body))
	theirs, _ := s.File("g/r", "main", "theirs.yaml")
	require.Equal(t, "2\n", theirs)
}

func TestActionsRefusedLikeGitaly(t *testing.T) {
	s := start(t)
	_, err := s.CreateProject("g/r", map[string]string{"a.yaml": "1\n"})
	require.NoError(t, err)
	before, _ := s.HeadCommit("g/r", "main")
	tests := []struct {
		action  map[string]any
		message string
	}{
		{action("create", "a.yaml", "x", ""), "A file with this name already exists"},
		{action("update", "missing.yaml", "x", ""), "A file with this name doesn't exist"},
		{action("delete", "missing.yaml", "", ""), "A file with this name doesn't exist"},
		{action("create", "a.yaml/b", "x", ""), "invalid path: 'a.yaml/b'"},
		{action("create", "../up", "x", ""), "Path cannot include directory traversal"},
	}
	for _, tt := range tests {
		resp := call(t, s, http.MethodPost, project("g/r")+"/repository/commits", authed(),
			commitBody("main", action("create", "fine.yaml", "ok", ""), tt.action))
		require.Equal(t, http.StatusBadRequest, resp.status)
		require.Equal(t, tt.message, resp.message(t))
	}
	after, _ := s.HeadCommit("g/r", "main")
	require.Equal(t, before.ID, after.ID, "a refused commit changes nothing, not even its valid actions")
}

func TestEmptyProjectAndNewBranches(t *testing.T) {
	s := start(t)
	_, err := s.CreateProject("g/empty", nil)
	require.NoError(t, err)
	resp := call(t, s, http.MethodGet, project("g/empty"), authed(), nil)
	require.Equal(t, true, resp.json(t)["empty_repo"])
	require.Equal(t, "main", resp.json(t)["default_branch"], "GitLab names the branch-to-be of an empty project")
	resp = call(t, s, http.MethodGet, project("g/empty")+"/repository/branches/main", authed(), nil)
	require.Equal(t, http.StatusNotFound, resp.status)
	require.Equal(t, "404 Branch Not Found", resp.message(t))

	resp = call(t, s, http.MethodPost, project("g/empty")+"/repository/commits", authed(),
		commitBody("main", action("create", "first.yaml", "1\n", "")))
	require.Equal(t, http.StatusCreated, resp.status, string(resp.body))
	require.Empty(t, resp.json(t)["parent_ids"], "the first commit has no parent")
	first := resp.json(t)["id"].(string)

	withStart := commitBody("feature", action("create", "f.yaml", "1\n", ""))
	withStart["start_sha"] = first
	resp = call(t, s, http.MethodPost, project("g/empty")+"/repository/commits", authed(), withStart)
	require.Equal(t, http.StatusCreated, resp.status, string(resp.body))
	require.Equal(t, []any{first}, resp.json(t)["parent_ids"])

	resp = call(t, s, http.MethodPost, project("g/empty")+"/repository/commits", authed(), withStart)
	require.Equal(t, http.StatusBadRequest, resp.status)
	require.Equal(t, "A branch called 'feature' already exists. Switch to that branch in order to make changes", resp.message(t))
	resp = call(t, s, http.MethodPost, project("g/empty")+"/repository/commits", authed(),
		commitBody("other", action("create", "o.yaml", "1\n", "")))
	require.Equal(t, "You can only create or edit files when you are on a branch", resp.message(t))
}

func TestAuthentication(t *testing.T) {
	s := start(t)
	s.AddToken("read-only", gitlab.User{Username: "reader", Name: "Reader", Email: "r@example.com", ReadOnly: true})
	p, err := s.CreateProject("g/r", map[string]string{"a": "1"})
	require.NoError(t, err)

	require.Equal(t, http.StatusOK, call(t, s, http.MethodGet, project("g/r"), authed(), nil).status)
	bearer := http.Header{"Authorization": {"Bearer " + token}}
	require.Equal(t, http.StatusOK, call(t, s, http.MethodGet, "/projects/"+strconv.Itoa(p.ID), bearer, nil).status, "by id, with a bearer token")
	resp := call(t, s, http.MethodGet, project("g/r"), http.Header{"Private-Token": {"wrong"}}, nil)
	require.Equal(t, http.StatusUnauthorized, resp.status)
	require.Equal(t, "401 Unauthorized", resp.message(t))
	resp = call(t, s, http.MethodGet, project("g/r"), http.Header{}, nil)
	require.Equal(t, http.StatusNotFound, resp.status, "a private project is invisible to anonymous callers")
	resp = call(t, s, http.MethodPost, project("g/r")+"/repository/commits", http.Header{"Private-Token": {"read-only"}},
		commitBody("main", action("create", "b", "1", "")))
	require.Equal(t, http.StatusForbidden, resp.status)
}

func TestRateLimitHeadersAnd429(t *testing.T) {
	s := start(t)
	_, err := s.CreateProject("g/r", map[string]string{"a": "1"})
	require.NoError(t, err)
	s.SetRateLimit(2, time.Minute)

	first := call(t, s, http.MethodGet, project("g/r"), authed(), nil)
	require.Equal(t, "2", first.header.Get("RateLimit-Limit"))
	require.Equal(t, "1", first.header.Get("RateLimit-Remaining"))
	require.NotEmpty(t, first.header.Get("RateLimit-Reset"))
	call(t, s, http.MethodGet, project("g/r"), authed(), nil)
	limited := call(t, s, http.MethodGet, project("g/r"), authed(), nil)
	require.Equal(t, http.StatusTooManyRequests, limited.status)
	require.Equal(t, "0", limited.header.Get("RateLimit-Remaining"))
	require.Equal(t, "3", limited.header.Get("RateLimit-Observed"))
	require.NotEmpty(t, limited.header.Get("Retry-After"))
	require.Equal(t, "Retry later\n", string(limited.body))
}

func TestTreePagination(t *testing.T) {
	s := start(t)
	seed := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		seed["dir/"+name+".yaml"] = name
	}
	seed["other.yaml"] = "o"
	_, err := s.CreateProject("g/r", seed)
	require.NoError(t, err)

	var paths []string
	next := s.APIURL() + project("g/r") + "/repository/tree?recursive=true&path=dir&pagination=keyset&per_page=2"
	for next != "" {
		resp := call(t, s, http.MethodGet, strings.TrimPrefix(next, s.APIURL()), authed(), nil)
		require.Equal(t, http.StatusOK, resp.status, string(resp.body))
		var nodes []map[string]string
		require.NoError(t, json.Unmarshal(resp.body, &nodes))
		for _, n := range nodes {
			paths = append(paths, n["path"])
		}
		next = ""
		if link := resp.header.Get("Link"); link != "" {
			next = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
	}
	require.Equal(t, []string{"dir/a.yaml", "dir/b.yaml", "dir/c.yaml", "dir/d.yaml", "dir/e.yaml"}, paths)

	offset := call(t, s, http.MethodGet, project("g/r")+"/repository/tree?recursive=true&per_page=4&page=1", authed(), nil)
	require.Equal(t, "2", offset.header.Get("X-Next-Page"))
	require.Equal(t, "2", offset.header.Get("X-Total-Pages"))
	missing := call(t, s, http.MethodGet, project("g/r")+"/repository/tree?path=nowhere&ref=main", authed(), nil)
	require.Equal(t, http.StatusNotFound, missing.status, "a missing path is 404 since GitLab 17.7")
}
