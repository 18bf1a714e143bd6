package gitlab

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitlabTime is the timestamp format of GitLab's API responses
// ("2012-09-20T11:50:22.000+03:00", https://docs.gitlab.com/api/commits/).
const gitlabTime = "2006-01-02T15:04:05.000Z07:00"

func (s *Server) webURL(p *project) string { return s.webBaseURL + "/" + p.path }

// getProject answers GET /projects/:id with the fields a client needs.
// https://docs.gitlab.com/api/projects/#get-a-single-project
//
// An empty project reports the name its first branch will get, the
// instance's default "main", as GitLab does since 14.1 ("Show the default
// \"default branch\" in the API for empty projects",
// https://gitlab.com/gitlab-org/gitlab/-/merge_requests/64944); only
// empty_repo says there is no branch.
func (s *Server) getProject(w http.ResponseWriter, p *project) {
	defaultBranch := p.defaultBranch
	if defaultBranch == "" {
		defaultBranch = "main"
	}
	name := p.path[strings.LastIndex(p.path, "/")+1:]
	writeJSON(w, http.StatusOK, map[string]any{
		"id": p.id, "name": name, "path": name, "path_with_namespace": p.path,
		"default_branch": defaultBranch, "empty_repo": p.empty(), "web_url": s.webURL(p),
		"http_url_to_repo": s.webURL(p) + ".git",
	})
}

// getBranch answers GET /projects/:id/repository/branches/:branch.
// https://docs.gitlab.com/api/branches/#get-single-repository-branch
func (s *Server) getBranch(w http.ResponseWriter, p *project, name string) {
	head, ok := p.branches[name]
	if !ok {
		writeMessage(w, http.StatusNotFound, "404 Branch Not Found")
		return
	}
	c, err := p.Commit(head)
	if err != nil {
		writeMessage(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name": name, "commit": s.commitJSON(p, c), "merged": false, "protected": false,
		"default": name == p.defaultBranch, "can_push": true,
		"web_url": s.webURL(p) + "/-/tree/" + name,
	})
}

// getCommit answers GET /projects/:id/repository/commits/:sha, where sha
// may also be a branch name. https://docs.gitlab.com/api/commits/#get-a-single-commit
func (s *Server) getCommit(w http.ResponseWriter, p *project, ref string) {
	c, ok := p.resolve(ref)
	if !ok {
		writeMessage(w, http.StatusNotFound, "404 Commit Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.commitJSON(p, c))
}

func (s *Server) commitJSON(p *project, c *object.Commit) map[string]any {
	parents := make([]string, 0, len(c.ParentHashes))
	for _, parent := range c.ParentHashes {
		parents = append(parents, parent.String())
	}
	title, _, _ := strings.Cut(c.Message, "\n")
	return map[string]any{
		"id": c.Hash.String(), "short_id": c.Hash.String()[:11], "title": title, "message": c.Message,
		"author_name": c.Author.Name, "author_email": c.Author.Email,
		"authored_date":  c.Author.When.Format(gitlabTime),
		"committer_name": c.Committer.Name, "committer_email": c.Committer.Email,
		"committed_date": c.Committer.When.Format(gitlabTime), "created_at": c.Committer.When.Format(gitlabTime),
		"parent_ids": parents, "web_url": s.webURL(p) + "/-/commit/" + c.Hash.String(),
	}
}

// getRawBlob answers GET /projects/:id/repository/blobs/:sha/raw.
// https://docs.gitlab.com/api/repositories/#raw-blob-content
func (s *Server) getRawBlob(w http.ResponseWriter, p *project, sha string) {
	if !plumbing.IsHash(sha) {
		writeMessage(w, http.StatusNotFound, "404 Blob Not Found")
		return
	}
	content, err := p.Blob(plumbing.NewHash(sha))
	if err != nil {
		writeMessage(w, http.StatusNotFound, "404 Blob Not Found")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(content)
}

// treeNode is one entry of a repository tree listing.
type treeNode struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
	Mode string `json:"mode"`
}

// getTree answers GET /projects/:id/repository/tree
// (https://docs.gitlab.com/api/repositories/#list-repository-tree): ref
// (default branch when absent), path, recursive, and both paginations.
// Since GitLab 17.7 a path that does not exist is 404, no longer an empty
// 200 (same page).
func (s *Server) getTree(w http.ResponseWriter, r *http.Request, p *project) {
	q := r.URL.Query()
	ref := q.Get("ref")
	if ref == "" {
		ref = p.defaultBranch
	}
	c, ok := p.resolve(ref)
	if !ok {
		writeMessage(w, http.StatusNotFound, "404 Tree Not Found")
		return
	}
	nodes, found, err := p.listTree(c, strings.Trim(q.Get("path"), "/"), q.Get("recursive") == "true")
	switch {
	case err != nil:
		writeMessage(w, http.StatusInternalServerError, err.Error())
	case !found:
		writeMessage(w, http.StatusNotFound, "404 invalid revision or path Not Found")
	case q.Get("pagination") == "keyset":
		s.writeKeysetPage(w, r, nodes)
	default:
		s.writeOffsetPage(w, r, nodes)
	}
}

// listTree lists the entries below dir, in path order. found is false when
// dir is not a directory of the commit.
func (p *project) listTree(c *object.Commit, dir string, recursive bool) ([]treeNode, bool, error) {
	root, err := c.Tree()
	if err != nil {
		return nil, false, err
	}
	tree := root
	if dir != "" {
		if tree, err = root.Tree(dir); err != nil {
			return nil, false, nil
		}
	}
	var nodes []treeNode
	walker := object.NewTreeWalker(tree, recursive, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		full := strings.TrimPrefix(dir+"/"+name, "/")
		kind := "blob"
		switch entry.Mode {
		case filemode.Dir:
			kind = "tree"
		case filemode.Submodule:
			kind = "commit"
		}
		nodes = append(nodes, treeNode{ID: entry.Hash.String(), Name: entry.Name, Type: kind, Path: full,
			Mode: fmt.Sprintf("%06o", uint32(entry.Mode))})
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Path < nodes[j].Path })
	return nodes, true, nil
}

// perPage reads per_page: 20 by default, at most 100.
// https://docs.gitlab.com/api/rest/#pagination
func perPage(q url.Values) int {
	n, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || n < 1 {
		return 20
	}
	return min(n, 100)
}

// writeOffsetPage pages with page/per_page and the X-* headers.
// https://docs.gitlab.com/api/rest/#offset-based-pagination
func (s *Server) writeOffsetPage(w http.ResponseWriter, r *http.Request, nodes []treeNode) {
	q := r.URL.Query()
	size := perPage(q)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	totalPages := max((len(nodes)+size-1)/size, 1)
	start := min((page-1)*size, len(nodes))
	end := min(start+size, len(nodes))
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(size))
	h.Set("X-Total", strconv.Itoa(len(nodes)))
	h.Set("X-Total-Pages", strconv.Itoa(totalPages))
	h.Set("X-Next-Page", "")
	if page < totalPages {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		h.Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", s.pageURL(r, "page", strconv.Itoa(page+1))))
	}
	if page > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(page-1))
	}
	writeJSON(w, http.StatusOK, nodes[start:end])
}

// writeKeysetPage pages with page_token and a Link rel="next" header, the
// tree's documented pagination since GitLab 15.0
// (https://docs.gitlab.com/api/rest/#keyset-based-pagination). The token
// here is the path of the last entry returned; clients treat it as opaque
// and follow the link.
func (s *Server) writeKeysetPage(w http.ResponseWriter, r *http.Request, nodes []treeNode) {
	q := r.URL.Query()
	size := perPage(q)
	start := 0
	if token := q.Get("page_token"); token != "" {
		start = sort.Search(len(nodes), func(i int) bool { return nodes[i].Path > token })
	}
	end := min(start+size, len(nodes))
	if end < len(nodes) {
		w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", s.pageURL(r, "page_token", nodes[end-1].Path)))
	}
	writeJSON(w, http.StatusOK, nodes[start:end])
}

// pageURL is the request's own URL with one query parameter replaced.
func (s *Server) pageURL(r *http.Request, key, value string) string {
	q := r.URL.Query()
	q.Set(key, value)
	return s.http.URL + r.URL.EscapedPath() + "?" + q.Encode()
}
