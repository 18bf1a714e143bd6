package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	offlineDeletes = 50
	offlineEdits   = 50
	// quietPeriod is how long a restarted operator that is Ready must stay
	// without committing, and without any forge request, for "nothing
	// changed" to count as no commit: Ready comes before an API forge's
	// worker has read the mirrored files back.
	quietPeriod = 3 * time.Second
)

// BenchmarkRestart is scenario D: the 2,000 ConfigMaps are mirrored, the
// operator stops, 50 are deleted and 50 edited, and the operator starts
// again. Figures: the time from the start to the remote matching the
// cluster, and the commits that took (one). Then a restart with nothing
// changed must make no commit. One sub-benchmark per forge.
func BenchmarkRestart(b *testing.B) { forEachForge(b, restart) }

func restart(b *testing.B, fk forgeKind) {
	e := sharedEnv(b)
	ctx := context.Background()
	m, f := newFleetMirror(b, e, "restart", mirrorOptions{forge: fk})
	first, _ := startOnFleet(b, e, m, f, m.name+"-first")
	require.NoError(b, waitReady(ctx, e, m, first, time.Minute))
	stopOperator(b, first)

	limits := restartLimits{matched: seconds(restartTarget)}
	restartAfterOfflineChanges(b, e, m, f, "D restart, 50+50 offline", limits)
	restartWithNothingChanged(b, e, m, "D restart, nothing changed", limits)
}

// restartLimits are the targets of a restart scenario; zero is "for
// information".
type restartLimits struct {
	// matched bounds the start to Git matching after the offline changes,
	// in seconds.
	matched float64
	// ready and requests bound the restart with nothing changed: start to
	// Ready in seconds, and all forge requests of the run.
	ready, requests float64
}

// restartAfterOfflineChanges deletes and edits ConfigMaps while no operator
// runs, then times a restart until Git matches the cluster.
func restartAfterOfflineChanges(b *testing.B, e *benchEnv, m *mirror, f fleet, scenario string, limits restartLimits) {
	ctx := context.Background()
	r := newReporter(b, scenario, m.repo.kind)
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	// Spread over every namespace: ConfigMap i*stride for the deletes, the
	// next one for the edits.
	stride := f.size() / offlineDeletes
	marker := "edited-while-stopped-" + m.name
	require.NoError(b, inParallel(ctx, offlineDeletes, apiWorkers, func(ctx context.Context, i int) error {
		return f.deleteConfigMap(ctx, e.client(), i*stride)
	}))
	require.NoError(b, inParallel(ctx, offlineEdits, apiWorkers, func(ctx context.Context, i int) error {
		return f.setValue(ctx, e.client(), i*stride+1, fmt.Sprintf("%s-%d", marker, i))
	}))

	base, err := startMark(e, m)
	require.NoError(b, err)
	op, err := startOperator(e, m.name+"-changed")
	require.NoError(b, err)
	defer stopOperator(b, op)
	matched, err := pollHeads(ctx, m.remote, op, 100*time.Millisecond, 2*time.Minute,
		func(ctx context.Context, head string) (bool, error) {
			files, err := countFleetFiles(ctx, m, f, head)
			if err != nil || files != f.size()-offlineDeletes {
				return false, err
			}
			edited, err := m.remote.filesContaining(ctx, head, marker)
			return edited == offlineEdits, err
		})
	require.NoError(b, err, "waiting for Git to match the cluster")
	u, err := op.usage()
	require.NoError(b, err)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	requests, err := markRequests(ctx, e, op, m, base, commitsAfter-commitsBefore)
	require.NoError(b, err)
	r.upTo("start to Git matching", seconds(matched.Sub(op.started)), "s", limits.matched)
	r.atMost("commits", float64(commitsAfter-commitsBefore), "", 1)
	// The whole run: reading the head, its tree and every mirrored file,
	// then the commit on a head this process did not make.
	reportRequests(r, m, "", base, requests, 0, 0)
	r.usage(u)
	// Let the run finish its replay before the next restart.
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
}

// waitQuiet waits until the operator's forge requests and commits have not
// changed for quiet, and returns when they last changed. The git forge
// counts no requests: it then waits quiet after its last commit.
func waitQuiet(ctx context.Context, op *operatorRun, quiet, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	last, lastChange := -1.0, time.Now()
	for {
		s, err := op.scrape(ctx)
		if err != nil {
			return time.Time{}, err
		}
		now := time.Now()
		if v := s.sum(metricRequests) + s.sum(metricCommits); v != last {
			last, lastChange = v, now
		}
		switch {
		case now.Sub(lastChange) >= quiet:
			return lastChange, nil
		case now.After(deadline):
			return time.Time{}, fmt.Errorf("the operator kept making requests for %s (log %s)", timeout, op.logPath)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// restartWithNothingChanged restarts the operator (with extra flags) on a
// cluster Git already matches: once the target is Ready and a quiet period
// passed, the branch must not have moved. It also reports what the run read
// of the ConfigMaps from the API server.
func restartWithNothingChanged(b *testing.B, e *benchEnv, m *mirror, scenario string, limits restartLimits, extra ...string) {
	ctx := context.Background()
	r := newReporter(b, scenario, m.repo.kind)
	require.NoError(b, m.resetStatus(ctx, e))
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	base, err := startMark(e, m)
	require.NoError(b, err)
	bytesBefore, err := e.apiServerConfigMapBytes(ctx)
	require.NoError(b, err)
	op, err := startOperatorArgs(e, m.name+"-unchanged", extra...)
	require.NoError(b, err)
	defer stopOperator(b, op)
	require.NoError(b, waitReadyEvery(ctx, e, m, op, time.Minute, 20*time.Millisecond))
	ready := time.Since(op.started)
	lastRequest, err := waitQuiet(ctx, op, quietPeriod, 2*time.Minute)
	require.NoError(b, err)
	u, err := op.usage()
	require.NoError(b, err)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	requests, err := markRequests(ctx, e, op, m, base, 0)
	require.NoError(b, err)
	r.upTo("start to Ready", seconds(ready), "s", limits.ready)
	if m.repo.kind != forgeGit {
		r.info("start to last forge request", seconds(lastRequest.Sub(op.started)), "s")
	}
	r.atMost("commits", float64(commitsAfter-commitsBefore), "", 0)
	bytesAfter, err := e.apiServerConfigMapBytes(ctx)
	require.NoError(b, err)
	r.info("ConfigMap bytes read from the API server", bytesAfter-bytesBefore, "B")
	reportRequests(r, m, "", base, requests, 0, 0)
	if limits.requests > 0 && m.repo.kind != forgeGit {
		r.atMost("all forge requests of the run", requests.metrics.sum(metricRequests), "", limits.requests)
	}
	r.usage(u)
}
