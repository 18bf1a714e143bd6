package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	ghsim "github.com/configbutler/gitops-reverser/test/sim/github"
)

// readerTag is a query parameter on every request the benchmark makes to
// the simulator, so its own reads can be told from the operator's in the
// request log (the simulator ignores parameters it does not know).
const readerTag = "bench-reader=1"

// githubRepo reads a repository of the GitHub simulator: the head from the
// simulator's test helper (no request), trees and blobs through the API
// with a token of its own (own rate-limit budget), tagged with readerTag.
// Trees and blobs are content-addressed, so they are cached. It is used
// from one goroutine at a time.
type githubRepo struct {
	sim               *ghsim.Server
	owner, name, path string
	client            *http.Client
	trees             map[string]string            // commit → root tree
	parents           map[string][]string          // commit → parents
	listings          map[string]map[string]string // root tree → file below path → blob
	blobs             map[string]string            // blob → content
}

func newGitHubRepo(sim *ghsim.Server, owner, name, path string) *githubRepo {
	return &githubRepo{sim: sim, owner: owner, name: name, path: path, client: &http.Client{Timeout: time.Minute},
		trees: map[string]string{}, parents: map[string][]string{}, listings: map[string]map[string]string{}, blobs: map[string]string{}}
}

func (g *githubRepo) head(context.Context) (string, error) {
	c, err := g.sim.HeadCommit(g.owner, g.name, "main")
	if err != nil {
		return "", nil // the repository exists, so main does not yet
	}
	g.trees[c.SHA], g.parents[c.SHA] = c.Tree, c.Parents
	return c.SHA, nil
}

// get reads an API path of the repository into out.
func (g *githubRepo) get(ctx context.Context, path, query string, out any) error {
	url := g.sim.URL() + "/repos/" + g.owner + "/" + g.name + path + "?" + readerTag
	if query != "" {
		url += "&" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+githubReaderToken)
	resp, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("reading %s from the GitHub simulator: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading %s from the GitHub simulator: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// commit learns a commit's tree and parents.
func (g *githubRepo) commit(ctx context.Context, sha string) error {
	if _, ok := g.trees[sha]; ok {
		return nil
	}
	var c struct {
		Tree    struct{ SHA string }
		Parents []struct{ SHA string }
	}
	if err := g.get(ctx, "/git/commits/"+sha, "", &c); err != nil {
		return err
	}
	g.trees[sha] = c.Tree.SHA
	for _, p := range c.Parents {
		g.parents[sha] = append(g.parents[sha], p.SHA)
	}
	return nil
}

// listing maps the files below the target's path at head to their blobs.
func (g *githubRepo) listing(ctx context.Context, head string) (map[string]string, error) {
	if err := g.commit(ctx, head); err != nil {
		return nil, err
	}
	tree := g.trees[head]
	if files, ok := g.listings[tree]; ok {
		return files, nil
	}
	var t struct {
		Tree      []struct{ Path, Type, SHA string }
		Truncated bool
	}
	if err := g.get(ctx, "/git/trees/"+tree, "recursive=1", &t); err != nil {
		return nil, err
	}
	if t.Truncated {
		return nil, fmt.Errorf("the tree of %s is truncated", head)
	}
	files := map[string]string{}
	for _, e := range t.Tree {
		if rel, ok := strings.CutPrefix(e.Path, g.path+"/"); ok && e.Type == "blob" {
			files[rel] = e.SHA
		}
	}
	g.listings[tree] = files
	return files, nil
}

func (g *githubRepo) blob(ctx context.Context, sha string) (string, error) {
	if content, ok := g.blobs[sha]; ok {
		return content, nil
	}
	var b struct{ Content, Encoding string }
	if err := g.get(ctx, "/git/blobs/"+sha, "", &b); err != nil {
		return "", err
	}
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(b.Content, "\n", ""))
	if err != nil || b.Encoding != "base64" {
		return "", fmt.Errorf("decoding blob %s (%s): %v", sha, b.Encoding, err)
	}
	g.blobs[sha] = string(raw)
	return g.blobs[sha], nil
}

func (g *githubRepo) files(ctx context.Context, head string) ([]string, error) {
	files, err := g.listing(ctx, head)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(files))
	for path := range files {
		out = append(out, path)
	}
	return out, nil
}

func (g *githubRepo) filesContaining(ctx context.Context, head, text string) (int, error) {
	files, err := g.listing(ctx, head)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sha := range files {
		content, err := g.blob(ctx, sha)
		if err != nil {
			return 0, err
		}
		if strings.Contains(content, text) {
			n++
		}
	}
	return n, nil
}

func (g *githubRepo) show(ctx context.Context, head, file string) (string, error) {
	files, err := g.listing(ctx, head)
	if err != nil {
		return "", err
	}
	sha, ok := files[file]
	if !ok {
		return "", fmt.Errorf("%s not in %s", file, head)
	}
	return g.blob(ctx, sha)
}

// commitCount walks main's history through the parents, reading each
// commit once.
func (g *githubRepo) commitCount(ctx context.Context) (int, error) {
	head, err := g.head(ctx)
	if err != nil || head == "" {
		return 0, err
	}
	seen := map[string]bool{}
	queue := []string{head}
	for len(queue) > 0 {
		sha := queue[0]
		queue = queue[1:]
		if seen[sha] {
			continue
		}
		seen[sha] = true
		if err := g.commit(ctx, sha); err != nil {
			return 0, err
		}
		queue = append(queue, g.parents[sha]...)
	}
	return len(seen), nil
}

// operatorRequests are the requests in the simulator's log between
// indexes from and to that the operator made: the benchmark's own reads are
// left out.
func (g *githubRepo) operatorRequests(from, to int) []ghsim.Request {
	all := g.sim.Requests()
	to = min(to, len(all))
	var out []ghsim.Request
	for _, r := range all[min(from, to):to] {
		if !strings.Contains(r.Query, readerTag) {
			out = append(out, r)
		}
	}
	return out
}
