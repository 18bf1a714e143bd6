package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

const (
	latencyCommitWindow = 100 * time.Millisecond
	// latencyPoll is how often the remote is checked for the edit; it bounds
	// the measurement's resolution.
	latencyPoll = 20 * time.Millisecond
	// editTimeout bounds the wait for one edit in Git: above a minute, so
	// an edit held back by GitHub's secondary rate limit (a Retry-After of
	// up to a minute) is measured rather than failed.
	editTimeout = 2 * time.Minute
)

// BenchmarkEditToCommitBackToBack is scenario B, back to back: an edit,
// wait until its commit is on the remote, the next edit at once.
func BenchmarkEditToCommitBackToBack(b *testing.B) {
	forEachForge(b, func(b *testing.B, fk forgeKind) { measureEditToCommit(b, fk, "B back-to-back", 30, 0) })
}

// BenchmarkEditToCommitSpaced is scenario B, spaced: one edit every 2 s.
func BenchmarkEditToCommitSpaced(b *testing.B) {
	forEachForge(b, func(b *testing.B, fk forgeKind) { measureEditToCommit(b, fk, "B spaced 2s", 15, 2*time.Second) })
}

// measureEditToCommit times samples edits of one ConfigMap, from just
// before the API write to the poller seeing the new value on the remote,
// with a 100ms commit window. spacing > 0 starts edits that far apart.
func measureEditToCommit(b *testing.B, fk forgeKind, scenario string, samples int, spacing time.Duration) {
	e := sharedEnv(b)
	ctx := context.Background()
	r := newReporter(b, scenario, fk)
	name := uniqueName("latency")
	m, err := newMirror(ctx, e, name, mirrorOptions{forge: fk, commitWindow: latencyCommitWindow})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, m.retire(ctx, e)) })
	probe := client.ObjectKey{Namespace: name, Name: "probe"}
	require.NoError(b, e.client().Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: probe.Namespace, Name: probe.Name}, Data: map[string]string{"key-0": "initial"}}))
	file := probe.Namespace + "/configmaps/" + probe.Name + ".yaml"

	op, err := startOperator(e, name)
	require.NoError(b, err)
	defer stopOperator(b, op)
	before, commitsBefore, oneCommit := latencyBaseline(b, r, e, m, op, file)

	latencies := make([]time.Duration, 0, samples)
	next := time.Now()
	for i := range samples {
		time.Sleep(time.Until(next))
		value := fmt.Sprintf("edit-%d-of-%s", i, name)
		start := time.Now()
		require.NoError(b, patchValue(ctx, e.client(), probe, value))
		seen, err := pollHeads(ctx, m.remote, op, latencyPoll, editTimeout, fileContains(m, file, value))
		require.NoError(b, err, "waiting for edit %d in Git", i)
		latencies = append(latencies, seen.Sub(start))
		next = start.Add(spacing)
	}
	u, err := op.usage()
	require.NoError(b, err)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	after, err := markRequests(ctx, e, op, m, before, commitsAfter-commitsBefore)
	require.NoError(b, err)
	reportLatency(r, latencies, oneCommit, 0, commitStats(before.metrics, after.metrics))
	r.info("commits per edit", float64(commitsAfter-commitsBefore)/float64(samples), "")
	perCommitTarget := 0.0
	if fk == forgeGitHub {
		perCommitTarget = githubCommitRequests
	}
	reportRequests(r, m, "1-file commits: ", before, after, commitsAfter-commitsBefore, perCommitTarget)
	r.usage(u)
}

// latencyBaseline waits until the operator mirrored the probe file (its
// value "initial") and is Ready, marks the request counters, and measures
// one remote commit through the mirror's forge apart from the operator. It
// returns the mark, the commits on the remote and the remote commit's time.
func latencyBaseline(b *testing.B, r reporter, e *benchEnv, m *mirror, op *operatorRun, file string) (requestMark, int, time.Duration) {
	b.Helper()
	ctx := context.Background()
	_, err := pollHeads(ctx, m.remote, op, 100*time.Millisecond, time.Minute, fileContains(m, file, "initial"))
	require.NoError(b, err, "waiting for the probe in Git")
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	before, err := markRequests(ctx, e, op, m, requestMark{}, commitsBefore)
	require.NoError(b, err)
	oneCommit, err := measureRemoteCommit(ctx, r, e, m.repo.kind, 15)
	require.NoError(b, err)
	return before, commitsBefore, oneCommit
}

// remoteCommitStats are the operator's own timings of the measured commits.
// The metrics trail the remote slightly (a commit is counted after its push
// returns), so counts come from the remote, not from here.
type remoteCommitStats struct {
	// meanCommit is the forge's time for one commit (build, push, CAS).
	meanCommit time.Duration
	// meanEventToCommit runs from the watch event's arrival to the commit
	// reaching the remote.
	meanEventToCommit time.Duration
}

func commitStats(before, after metricSamples) remoteCommitStats {
	delta := func(name string) float64 { return after.sum(name) - before.sum(name) }
	mean := func(family string) time.Duration {
		n := delta(family + "_count")
		if n == 0 {
			return 0
		}
		return time.Duration(delta(family+"_sum") / n * float64(time.Second))
	}
	return remoteCommitStats{
		meanCommit:        mean("gitopsreverser_commit_duration_seconds"),
		meanEventToCommit: mean("gitopsreverser_event_to_commit_seconds"),
	}
}

// reportLatency records the edit-to-commit figures; the p50 target is the
// commit window, one remote commit, latencySlack and extra (what the
// scenario adds on purpose, e.g. the audit batch wait).
func reportLatency(r reporter, latencies []time.Duration, oneCommit, extra time.Duration, stats remoteCommitStats) {
	r.b.Helper()
	p50, p90 := percentile(latencies, 50), percentile(latencies, 90)
	target := latencyCommitWindow + oneCommit + latencySlack + extra
	r.atMost("p50 API write to remote", float64(p50.Milliseconds()), "ms", float64(target.Milliseconds()))
	r.info("p90 API write to remote", float64(p90.Milliseconds()), "ms")
	r.info("max API write to remote", float64(percentile(latencies, 100).Milliseconds()), "ms")
	r.info("one remote commit (probe p50)", milliseconds(oneCommit), "ms")
	r.info("operator's commit time (mean)", milliseconds(stats.meanCommit), "ms")
	r.info("operator's event to commit (mean)", float64(stats.meanEventToCommit.Milliseconds()), "ms")
	r.b.Logf("latencies: %v", latencies)
}

// measureRemoteCommit is the p50 of commits of one small file made through
// the scenario's forge to a repository of its own on the same server (for
// GitHub a simulator of its own): "one remote commit" on this machine,
// measured apart from the operator. For the API forges it also records the
// median time of each request of a commit, and for Gitea the CPU its web
// process and its children (git and the hooks) spend on one.
func measureRemoteCommit(ctx context.Context, r reporter, e *benchEnv, fk forgeKind, commits int) (time.Duration, error) {
	timed := newTimedTransport()
	p, err := newProbeForge(ctx, e, fk, uniqueName("commit-probe"), timed)
	if err != nil {
		return 0, err
	}
	defer p.close()
	// The first read fetches the snapshot, as a branch worker's does; the
	// commits after it build on their own predecessor, as the worker's do.
	if _, err := p.forge.Tree(ctx, p.head, ""); err != nil {
		return 0, fmt.Errorf("reading the commit probe's repository: %w", err)
	}
	timed.reset()
	cpuBefore, cpuErr := giteaCPUIf(e, fk)
	author := forges.Signature{Name: "Benchmark", Email: "bench@example.invalid"}
	durations := make([]time.Duration, 0, commits)
	head := p.head
	const probePath = "clusters/probe/configmaps/probe.yaml"
	base := "" // the probe's file is new to the repository; then each commit's own blob
	for i := range commits {
		start := time.Now()
		res, err := p.forge.Commit(ctx, forges.CommitRequest{
			Branch: "main", ExpectedHead: head, Message: fmt.Sprintf("probe %d", i), Author: author, Committer: author,
			Changes: []gitfile.Change{{Path: probePath, BaseBlob: base,
				Content: fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n  key-0: edit-%d\n", i)}},
		})
		if err != nil {
			return 0, fmt.Errorf("commit %d of the commit probe: %w", i, err)
		}
		durations = append(durations, time.Since(start))
		head, base = res.Commit, res.Blobs[probePath]
	}
	for op, took := range timed.medians() {
		r.info("probe "+op+" (p50)", milliseconds(took), "ms")
	}
	if cpuAfter, err := giteaCPUIf(e, fk); err == nil && cpuErr == nil && fk == forgeGitea {
		r.info("probe gitea CPU per commit, web process", float64((cpuAfter.own-cpuBefore.own).Milliseconds())/float64(commits), "ms")
		r.info("probe gitea CPU per commit, git and hooks", float64((cpuAfter.children-cpuBefore.children).Milliseconds())/float64(commits), "ms")
	}
	return percentile(durations, 50), nil
}

// giteaCPUIf reads Gitea's CPU times when the scenario commits to Gitea.
func giteaCPUIf(e *benchEnv, fk forgeKind) (giteaCPU, error) {
	if fk != forgeGitea {
		return giteaCPU{}, nil
	}
	g, err := e.giteaServer()
	if err != nil {
		return giteaCPU{}, err
	}
	return g.cpu()
}
