package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/configbutler/gitops-reverser/internal/metrics"
	ghsim "github.com/configbutler/gitops-reverser/test/sim/github"
)

const (
	metricCommits   = "gitopsreverser_commits_total"
	metricRequests  = "gitopsreverser_forge_requests_total"
	metricPerCommit = "gitopsreverser_forge_requests_per_commit"
	// githubCommitRequests is the GitHub forge's documented cost of a
	// commit on a head whose tree it knows: tree, commit, ref update.
	githubCommitRequests = 3
)

// perCommitBuckets are the histogram's buckets (internal/metrics).
var perCommitBuckets = []string{"1", "2", "3", "4", "5", "6", "8", "10", "15", "20"}

// requestMark is the request counters at one moment of a scenario: the
// operator's metrics, on GitHub the length of the simulator's log, on
// Gitea its CPU time so far.
type requestMark struct {
	metrics metricSamples
	simLog  int
	gitea   *giteaCPU
}

// startMark marks the moment before an operator run starts: the forge's
// counters, no metrics yet.
func startMark(e *benchEnv, m *mirror) (requestMark, error) {
	var mark requestMark
	if m.repo.github != nil {
		mark.simLog = m.repo.github.sim.RequestCount()
	}
	if m.repo.kind == forgeGitea || m.repo.kind == forgeGiteaPush {
		g, err := e.giteaServer()
		if err != nil {
			return mark, err
		}
		cpu, err := g.cpu()
		if err != nil {
			return mark, err
		}
		mark.gitea = &cpu
	}
	return mark, nil
}

// markRequests scrapes the operator once its metrics count wantCommits more
// commits than base: the metrics trail the remote slightly. It gives up
// waiting after 3 s (GitHub's bootstrap makes two remote commits in one
// forge commit).
func markRequests(ctx context.Context, e *benchEnv, op *operatorRun, m *mirror, base requestMark, wantCommits int) (requestMark, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		s, err := op.scrape(ctx)
		if err != nil {
			return requestMark{}, err
		}
		if s.sum(metricCommits)-base.metrics.sum(metricCommits) >= float64(wantCommits) || time.Now().After(deadline) {
			mark, err := startMark(e, m)
			mark.metrics = s
			return mark, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reportRequests records what the operator asked of the forge between two
// marks: requests per commit from its histogram (the requests of each
// forge commit, what the forges document), every forge request by
// operation, and on GitHub the simulator's own count. phase prefixes the
// figures; perCommitTarget > 0 makes the mean a target.
func reportRequests(r reporter, m *mirror, phase string, before, after requestMark, commits int, perCommitTarget float64) {
	r.b.Helper()
	if m.repo.kind == forgeGit {
		return // the Git protocol: no API requests to count
	}
	delta := func(name string, matchers ...string) float64 {
		return after.metrics.sum(name, matchers...) - before.metrics.sum(name, matchers...)
	}
	if observed := delta(metricPerCommit + "_count"); observed > 0 {
		perCommit := delta(metricPerCommit+"_sum") / observed
		if perCommitTarget > 0 {
			r.atMost(phase+"requests per commit", perCommit, "", perCommitTarget)
		} else {
			r.info(phase+"requests per commit", perCommit, "")
		}
		most := math.Inf(1)
		for _, le := range perCommitBuckets {
			if delta(metricPerCommit+"_bucket", `le="`+le+`"`) >= observed {
				fmt.Sscan(le, &most)
				break
			}
		}
		r.info(phase+"most requests in a commit", most, "")
	}
	r.info(phase+"forge requests", delta(metricRequests), "")
	r.b.Logf("%sforge requests by operation (operator metrics): %s", phase, operationDeltas(before.metrics, after.metrics))
	if m.repo.github != nil {
		reportSimRequests(r, m.repo.github, phase, before.simLog, after.simLog, commits)
	}
	if before.gitea != nil && after.gitea != nil {
		r.info(phase+"gitea CPU, web process", seconds(after.gitea.own-before.gitea.own), "s")
		r.info(phase+"gitea CPU, git and hooks", seconds(after.gitea.children-before.gitea.children), "s")
	}
}

// operationDeltas lists forge_requests_total's increase by operation and
// status.
func operationDeltas(before, after metricSamples) string {
	var parts []string
	for _, s := range after {
		if s.name != metricRequests {
			continue
		}
		if d := s.value - before.sum(metricRequests, s.labels); d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", strings.TrimSuffix(strings.TrimPrefix(s.labels, "{"), "}"), d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// reportSimRequests counts the operator's requests in the simulator's log
// between two marks.
func reportSimRequests(r reporter, g *githubRepo, phase string, from, to, commits int) {
	r.b.Helper()
	reqs := g.operatorRequests(from, to)
	r.info(phase+"simulator requests", float64(len(reqs)), "")
	if commits > 0 {
		r.info(phase+"simulator requests per commit", float64(len(reqs))/float64(commits), "")
	}
	r.atMost(phase+"GitHub 403/429 answers", float64(countLimited(reqs)), "", 0)
	r.b.Logf("%ssimulator log by operation: %s", phase, summarizeRequests(reqs))
}

func countLimited(reqs []ghsim.Request) int {
	n := 0
	for _, req := range reqs {
		if req.Status == http.StatusForbidden || req.Status == http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

// summarizeRequests counts requests by operation and status, named as the
// operator's metrics name them.
func summarizeRequests(reqs []ghsim.Request) string {
	counts := map[string]int{}
	for _, req := range reqs {
		counts[fmt.Sprintf("%s %d", metrics.Operation(req.Method, req.Path), req.Status)]++
	}
	parts := make([]string, 0, len(counts))
	for op, n := range counts {
		parts = append(parts, fmt.Sprintf("%s: %d", op, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// timedTransport records how long each API request took, by operation.
type timedTransport struct {
	mu   sync.Mutex
	took map[string][]time.Duration
}

func newTimedTransport() *timedTransport { return &timedTransport{took: map[string][]time.Duration{}} }

func (t *timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(req)
	took := time.Since(start)
	t.mu.Lock()
	defer t.mu.Unlock()
	op := metrics.Operation(req.Method, req.URL.Path)
	t.took[op] = append(t.took[op], took)
	return resp, err
}

func (t *timedTransport) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.took = map[string][]time.Duration{}
}

// medians is the median time of each operation.
func (t *timedTransport) medians() map[string]time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Duration, len(t.took))
	for op, took := range t.took {
		out[op] = percentile(took, 50)
	}
	return out
}
