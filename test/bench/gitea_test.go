package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gitea"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/gitfile"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// benchGitea is the Gitea of the run, started by the first scenario that
// commits through it.
type benchGitea struct {
	server *harness.Gitea
	dir    string
}

type lazyGitea struct {
	once sync.Once
	g    *benchGitea
	err  error
}

// giteaServer starts Gitea once and returns it.
func (e *benchEnv) giteaServer() (*benchGitea, error) {
	e.gitea.once.Do(func() {
		dir := filepath.Join(e.dir, "gitea")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			e.gitea.err = fmt.Errorf("creating the gitea directory: %w", err)
			return
		}
		start := time.Now()
		server, err := harness.StartGitea(dir)
		if err != nil {
			e.gitea.err = fmt.Errorf("starting gitea: %w", err)
			return
		}
		e.gitea.g = &benchGitea{server: server, dir: dir}
		e.gitea.err = e.gitea.g.warmUp()
		fmt.Printf("gitea %s started and warmed up in %s\n", harness.GiteaVersion, time.Since(start).Round(time.Millisecond))
	})
	return e.gitea.g, e.gitea.err
}

// warmUp makes one commit through the API, so what Gitea does once (its
// first repository operations, templates, the hook binaries' page cache)
// lands on no scenario.
func (g *benchGitea) warmUp() error {
	ctx := context.Background()
	forge, err := g.probeClient("gitea-warm-up", nil)
	if err != nil {
		return err
	}
	head, err := forge.Head(ctx, "main")
	if err != nil {
		return fmt.Errorf("warming gitea up: %w", err)
	}
	author := forges.Signature{Name: "Benchmark", Email: "bench@example.invalid", When: time.Now()}
	_, err = forge.Commit(ctx, forges.CommitRequest{Branch: "main", ExpectedHead: head, Message: "warm up",
		Author: author, Committer: author, Changes: []gitfile.Change{{Path: "warm.yaml", Content: []byte("warm: up\n")}}})
	if err != nil {
		return fmt.Errorf("warming gitea up: %w", err)
	}
	return nil
}

// probeClient creates repository name with a first commit (a README on
// main) and returns a Gitea API forge client for it; rt carries its
// requests.
func (g *benchGitea) probeClient(name string, rt http.RoundTripper) (*gitea.Client, error) {
	repo, err := g.server.CreateRepo(name, true)
	if err != nil {
		return nil, err
	}
	return gitea.New(gitea.Options{BaseURL: g.server.URL(), Owner: repo.Owner.UserName, Repo: name,
		Token: g.server.Token(), HTTPClient: &http.Client{Transport: rt}})
}

// operatorClient is probeClient configured as the operator configures its
// Gitea forge (internal/forgeconn): commits pushed over smart HTTP with the
// token.
func (g *benchGitea) operatorClient(name string, rt http.RoundTripper) (*gitea.Client, error) {
	if _, err := g.server.CreateRepo(name, true); err != nil {
		return nil, err
	}
	opts := gitea.Options{BaseURL: g.server.URL(), Owner: g.server.AdminUser(), Repo: name,
		Token: g.server.Token(), HTTPClient: &http.Client{Transport: rt}}
	cloneURL, err := gitea.CloneURL(opts)
	if err != nil {
		return nil, err
	}
	if opts.Pusher, err = gogit.New(gogit.Options{URL: cloneURL, Auth: gogit.BasicAuth{Username: g.server.AdminUser(), Password: g.server.Token()}}); err != nil {
		return nil, err
	}
	return gitea.New(opts)
}

// repoPath is where Gitea keeps owner/name: a bare repository below its
// repository root ([repository] ROOT in the harness's app.ini), names in
// lower case.
func (g *benchGitea) repoPath(owner, name string) string {
	return filepath.Join(g.dir, "repositories", strings.ToLower(owner), strings.ToLower(name)+".git")
}

func (g *benchGitea) stop() {
	if g != nil {
		g.server.Stop()
	}
}

// giteaCPU is Gitea's CPU time so far, its own (the web process) and that
// of the processes it started and waited for (git, and the hooks git runs,
// which are the Gitea binary again): the split tells which dominates a
// commit.
type giteaCPU struct{ own, children time.Duration }

// cpu reads the Gitea web process's CPU times from /proc. The harness does
// not expose its pid; it is the process whose command line names this
// Gitea's work path.
func (g *benchGitea) cpu() (giteaCPU, error) {
	pid, err := g.pid()
	if err != nil {
		return giteaCPU{}, err
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return giteaCPU{}, fmt.Errorf("reading gitea's CPU time: %w", err)
	}
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	// utime, stime, cutime, cstime are fields 14-17 of proc(5), counted
	// here from field 3.
	var ticks [4]float64
	for i := range ticks {
		if ticks[i], err = strconv.ParseFloat(fields[11+i], 64); err != nil {
			return giteaCPU{}, fmt.Errorf("parsing gitea's CPU time: %w", err)
		}
	}
	tick := time.Second / userHZ
	return giteaCPU{own: time.Duration(ticks[0]+ticks[1]) * tick, children: time.Duration(ticks[2]+ticks[3]) * tick}, nil
}

func (g *benchGitea) pid() (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	want := []byte("--work-path\x00" + g.dir + "\x00")
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, want) && bytes.Contains(cmdline, []byte("\x00web")) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no gitea web process with work path %s", g.dir)
}
