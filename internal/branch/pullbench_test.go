package branch

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/forges"
	forgegitea "github.com/configbutler/gitops-reverser/forges/gitea"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	forgegitlab "github.com/configbutler/gitops-reverser/forges/gitlab"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/test/harness"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
	simgitlab "github.com/configbutler/gitops-reverser/test/sim/gitlab"
)

// steadyChanges is an hour of one change a second.
const steadyChanges = 3600

// steadyForge is a forge on a simulator, and what the benchmark reads of
// the simulator: its request count, and the head of a branch with its
// tree ("" when the simulator does not say).
type steadyForge struct {
	forge    forges.Forge
	requests func() int
	// pullRequests counts the requests on pull (merge) requests.
	pullRequests func() int
	head         func(branch string) (sha, tree string)
}

func githubSteady(b *testing.B, clock *clocktesting.FakeClock) steadyForge {
	sim := simgithub.Start(simgithub.WithClock(clock.Now))
	b.Cleanup(sim.Close)
	sim.AddToken("ghp_bench")
	if err := sim.CreateRepo("configbutler", "steady", map[string]string{"README.md": "hello\n"}); err != nil {
		b.Fatal(err)
	}
	client, err := forgegithub.New(forgegithub.Options{Owner: "configbutler", Repo: "steady", APIURL: sim.URL(),
		Token: "ghp_bench", Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	return steadyForge{forge: client, requests: sim.RequestCount,
		pullRequests: func() int {
			var paths []string
			for _, r := range sim.Requests() {
				paths = append(paths, r.Path)
			}
			return containing(paths, "/pulls")
		},
		head: func(branch string) (string, string) {
			c, err := sim.HeadCommit("configbutler", "steady", branch)
			if err != nil {
				return "", ""
			}
			return c.SHA, c.Tree
		}}
}

func gitlabSteady(b *testing.B, _ *clocktesting.FakeClock) steadyForge {
	server := simgitlab.Start()
	b.Cleanup(server.Close)
	server.AddToken("glpat-bench", simgitlab.User{Username: "bot", Name: "Bot", Email: "bot@example.com"})
	if _, err := server.CreateProject("g/steady", map[string]string{"README.md": "hello\n"}); err != nil {
		b.Fatal(err)
	}
	client, err := forgegitlab.New(forgegitlab.Options{APIURL: server.APIURL(), Project: "g/steady", Token: "glpat-bench"})
	if err != nil {
		b.Fatal(err)
	}
	return steadyForge{forge: client, requests: func() int { return len(server.Requests()) },
		pullRequests: func() int {
			var paths []string
			for _, r := range server.Requests() {
				paths = append(paths, r.Path)
			}
			return containing(paths, "/merge_requests")
		},
		head: func(branch string) (string, string) {
			c, ok := server.HeadCommit("g/steady", branch)
			if !ok {
				return "", ""
			}
			return c.ID, ""
		}}
}

// containing counts the paths that contain part.
func containing(paths []string, part string) int {
	n := 0
	for _, p := range paths {
		if strings.Contains(p, part) {
			n++
		}
	}
	return n
}

// steadyResult is what an hour of steady changes cost.
type steadyResult struct {
	pushes, noopPushes, requests, pullRequests, updates int
}

// runSteady drives a worker by hand on a fake clock (handle, then a tick
// a second later) through an hour of one change a second: twenty objects
// in turn, every tenth change writing again what Git already has. With
// pullRequest the worker commits to a head branch and keeps a pull
// request; without, it commits to main.
func runSteady(b *testing.B, build func(*testing.B, *clocktesting.FakeClock) steadyForge, pullRequest bool) steadyResult {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := build(b, clock)
	outcomes := make(chan Outcome, 1<<16)
	cfg := Config{Key: Key{Branch: "main"}, Forge: f.forge, Clock: clock, Log: logr.Discard(), Outcomes: outcomes}
	if pullRequest {
		cfg.Key.Branch = "gitops-reverser/steady"
		cfg.PullRequest = &PullRequestSettings{Base: "main"}
	}
	w := New(cfg)
	key := TargetKey{Namespace: "team", Name: "steady"}
	w.updateTarget(ctx, targetMsg{target: Target{Key: key, Path: "mirror"}})
	var res steadyResult
	requestsBefore, pullsBefore := f.requests(), f.pullRequests()
	lastSHA, lastTree := f.head(cfg.Key.Branch)
	if lastSHA == "" {
		lastSHA, lastTree = f.head("main")
	}
	values := map[int]int{}
	for i := range steadyChanges {
		obj := i % 20
		if i%10 != 9 {
			values[obj] = i // every tenth change writes what is there
		}
		w.handle(ctx, writeMsg{target: key, write: steadyWrite(obj, values[obj])})
		clock.Step(time.Second)
		w.tick(ctx)
		if sha, tree := f.head(cfg.Key.Branch); sha != "" && sha != lastSHA {
			res.pushes++
			if testing.Verbose() && res.pushes < 6 {
				b.Logf("push %d at change %d", res.pushes, i)
			}
			if tree != "" && tree == lastTree {
				res.noopPushes++
			}
			lastSHA, lastTree = sha, tree
		}
		for len(outcomes) > 0 {
			if o := <-outcomes; o.Kind == OutcomePullRequest {
				res.updates++
			}
		}
	}
	res.requests, res.pullRequests = f.requests()-requestsBefore, f.pullRequests()-pullsBefore
	return res
}

func steadyWrite(obj, value int) Write {
	name := fmt.Sprintf("cm-%02d", obj)
	return Write{ID: manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: name},
		YAML: fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: team\ndata:\n  v: \"%d\"\n", name, value)}
}

// BenchmarkPullRequestModeSteady: an hour of one change a second (3,600
// changes on a fake clock) in direct mode and in pull-request mode, on the
// GitHub and GitLab simulators. Reported: pushes in the hour (commits that
// moved the branch), pushes that changed no tree (0 is the target),
// requests per push, and pull request requests per update. Run with
// -benchtime=1x: each iteration is the whole hour.
func BenchmarkPullRequestModeSteady(b *testing.B) {
	forgesUnder := []struct {
		name  string
		build func(*testing.B, *clocktesting.FakeClock) steadyForge
	}{{"github", githubSteady}, {"gitlab", gitlabSteady}}
	for _, fu := range forgesUnder {
		for _, pr := range []bool{false, true} {
			mode := "direct"
			if pr {
				mode = "pullrequest"
			}
			b.Run(fu.name+"/"+mode, func(b *testing.B) {
				var res steadyResult
				for b.Loop() {
					res = runSteady(b, fu.build, pr)
				}
				b.ReportMetric(float64(res.pushes), "pushes/h")
				b.ReportMetric(float64(res.noopPushes), "noop-pushes/h")
				if res.pushes > 0 {
					b.ReportMetric(float64(res.requests)/float64(res.pushes), "requests/push")
				}
				if res.updates > 0 {
					b.ReportMetric(float64(res.pullRequests)/float64(res.updates), "pr-requests/update")
				}
			})
		}
	}
}

// countingTransport counts the requests it carries, and those on pull
// requests.
type countingTransport struct {
	next       http.RoundTripper
	all, pulls atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.all.Add(1)
	if strings.Contains(r.URL.Path, "/pulls") {
		c.pulls.Add(1)
	}
	return c.next.RoundTrip(r)
}

// BenchmarkPullRequestUpdateOnGitea: ten updates of an open pull request
// on a real Gitea (test/harness), the commits pushed over git as the
// operator configures Gitea. Reported: API requests per update beside the
// push, and pull request requests per update.
func BenchmarkPullRequestUpdateOnGitea(b *testing.B) {
	server, err := harness.StartGitea(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(server.Stop)
	var apiPerUpdate, pullsPerUpdate float64
	for b.Loop() {
		apiPerUpdate, pullsPerUpdate = giteaUpdates(b, server)
	}
	b.ReportMetric(apiPerUpdate, "api-requests/update")
	b.ReportMetric(pullsPerUpdate, "pr-requests/update")
}

func giteaUpdates(b *testing.B, server *harness.Gitea) (apiPerUpdate, pullsPerUpdate float64) {
	created, err := server.CreateRepo(fmt.Sprintf("bench-%d", time.Now().UnixNano()), true)
	if err != nil {
		b.Fatal(err)
	}
	counter := &countingTransport{next: http.DefaultTransport}
	opts := forgegitea.Options{BaseURL: server.URL(), Owner: server.AdminUser(), Repo: created.Name, Token: server.Token(),
		HTTPClient: &http.Client{Transport: counter, Timeout: time.Minute}}
	cloneURL, err := forgegitea.CloneURL(opts)
	if err != nil {
		b.Fatal(err)
	}
	if opts.Pusher, err = gogit.New(gogit.Options{URL: cloneURL, Auth: gogit.BasicAuth{Username: "git", Password: server.Token()}}); err != nil {
		b.Fatal(err)
	}
	client, err := forgegitea.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	w := New(Config{Key: Key{Branch: "gitops-reverser/bench"}, Forge: client, CommitWindow: time.Hour, Log: logr.Discard(),
		PullRequest: &PullRequestSettings{Base: created.DefaultBranch}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	key := TargetKey{Namespace: "team", Name: "bench"}
	if err := w.SetTarget(ctx, Target{Key: key, Path: "mirror"}); err != nil {
		b.Fatal(err)
	}
	update := func(i int) {
		if err := w.Write(ctx, key, Author{}, steadyWrite(0, i)); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
	update(0) // opens the pull request
	all, pulls := counter.all.Load(), counter.pulls.Load()
	const updates = 10
	for i := 1; i <= updates; i++ {
		update(i)
	}
	return float64(counter.all.Load()-all) / updates, float64(counter.pulls.Load()-pulls) / updates
}
