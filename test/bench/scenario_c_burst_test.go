package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkBurstUpdate is scenario C: with all 2,000 ConfigMaps mirrored
// and the operator idle, every one is updated once, as fast as the API
// server takes it; the figure is the time from the first update to the
// remote holding all 2,000 new values. Nothing may be dropped (the branch
// worker's queue blocks the watch instead) and no watch may reconnect.
// After it, one more update measures a 1-file commit in the 2,000-file
// repository. One sub-benchmark per forge.
func BenchmarkBurstUpdate(b *testing.B) { forEachForge(b, burstUpdate) }

func burstUpdate(b *testing.B, fk forgeKind) {
	e := sharedEnv(b)
	ctx := context.Background()
	r := newReporter(b, "C burst of 2,000 updates", fk)
	m, f := newFleetMirror(b, e, "burst", mirrorOptions{forge: fk})
	op, _ := startOnFleet(b, e, m, f, m.name)
	defer stopOperator(b, op)
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
	after := measureBurst(b, r, e, op, m, f, func(float64) float64 { return seconds(burstTarget) })
	singleEditInFleet(b, r, e, op, m, f, after)
}

// measureBurst updates every ConfigMap of the mirrored fleet once, as fast
// as the API server takes it, and records the time from the first update
// to the remote holding all new values (its target in seconds is
// limit(value), none when that is zero), what was dropped and the requests
// it took. It returns the request mark at its end.
func measureBurst(b *testing.B, r reporter, e *benchEnv, op *operatorRun, m *mirror, f fleet, limit func(value float64) float64) requestMark {
	ctx := context.Background()
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	before, err := markRequests(ctx, e, op, m, requestMark{}, commitsBefore)
	require.NoError(b, err)
	cpuBefore, err := op.usage()
	require.NoError(b, err)

	marker := "burst-marker-" + m.name
	start := time.Now()
	require.NoError(b, inParallel(ctx, f.size(), apiWorkers, func(ctx context.Context, i int) error {
		return f.setValue(ctx, e.client(), i, fmt.Sprintf("%s-%04d", marker, i))
	}))
	writes := time.Since(start)
	landed := 0
	seen, waitErr := pollHeads(ctx, m.remote, op, 200*time.Millisecond, 3*time.Minute,
		func(ctx context.Context, head string) (bool, error) {
			n, err := m.remote.filesContaining(ctx, head, marker)
			landed = n
			return n == f.size(), err
		})
	u, err := op.usage()
	require.NoError(b, err)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	after, err := markRequests(ctx, e, op, m, before, commitsAfter-commitsBefore)
	require.NoError(b, err)

	if waitErr == nil {
		took := seconds(seen.Sub(start))
		r.upTo("first update to all in Git", took, "s", limit(took))
		// The commit window is a rolling silence: it closes this long
		// after the burst's last event.
		r.info("last update to all in Git", seconds(seen.Sub(start.Add(writes))), "s")
	} else {
		b.Errorf("not every update reached Git: %v", waitErr)
	}
	r.info("API writes took", seconds(writes), "s")
	reportBurstStream(r, f, landed, before.metrics, after.metrics)
	r.info("commits", float64(commitsAfter-commitsBefore), "")
	reportRequests(r, m, "2,000-file commit: ", before, after, commitsAfter-commitsBefore, githubTarget(m.repo.kind))
	r.info("operator CPU during the burst", u.CPUSeconds-cpuBefore.CPUSeconds, "s")
	r.usage(u)
	return after
}

// reportBurstStream records what the watch delivered and what was lost.
func reportBurstStream(r reporter, f fleet, landed int, before, after metricSamples) {
	r.b.Helper()
	r.atMost("updates not in Git (dropped)", float64(f.size()-landed), "", 0)
	r.info("MODIFIED watch events", after.sum("gitopsreverser_watch_events_total", `type="MODIFIED"`)-
		before.sum("gitopsreverser_watch_events_total", `type="MODIFIED"`), "")
	// A labeled counter is exported only once it has a child, so a family
	// that never counted is absent and sums to zero.
	r.atMost("watch reconnects", after.sum("gitopsreverser_watch_reconnects_total"), "", 0)
	r.atMost("watch 410 Gone", after.sum("gitopsreverser_watch_gone_total"), "", 0)
}

// singleEditInFleet updates one ConfigMap of the mirrored fleet and counts
// the requests of its commit: a 1-file commit in a 2,000-file repository.
func singleEditInFleet(b *testing.B, r reporter, e *benchEnv, op *operatorRun, m *mirror, f fleet, before requestMark) {
	ctx := context.Background()
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	value := "single-edit-" + m.name
	start := time.Now()
	require.NoError(b, f.setValue(ctx, e.client(), 7, value))
	seen, err := pollHeads(ctx, m.remote, op, 100*time.Millisecond, 2*time.Minute,
		fileContains(m, f.namespace(7)+"/configmaps/"+f.configMapName(7)+".yaml", value))
	require.NoError(b, err, "waiting for the single edit in Git")
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	after, err := markRequests(ctx, e, op, m, before, commitsAfter-commitsBefore)
	require.NoError(b, err)
	r.info("single edit to Git (default window)", seconds(seen.Sub(start)), "s")
	reportRequests(r, m, "1-file commit in 2,000: ", before, after, commitsAfter-commitsBefore, githubTarget(m.repo.kind))
}

// githubTarget is the requests-per-commit target: 3 on GitHub for a commit
// on the operator's own last commit; none elsewhere.
func githubTarget(fk forgeKind) float64 {
	if fk == forgeGitHub {
		return githubCommitRequests
	}
	return 0
}
