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
	// without committing for "nothing changed" to count as no commit.
	quietPeriod = 3 * time.Second
)

// BenchmarkRestart is scenario D: the 2,000 ConfigMaps are mirrored, the
// operator stops, 50 are deleted and 50 edited, and the operator starts
// again. Figures: the time from the start to the remote matching the
// cluster, and the commits that took (one). Then a restart with nothing
// changed must make no commit.
func BenchmarkRestart(b *testing.B) {
	e := sharedEnv(b)
	ctx := context.Background()
	m, f := newFleetMirror(b, e, "restart", mirrorOptions{})
	first, _ := startOnFleet(b, e, m, f, m.name+"-first")
	require.NoError(b, waitReady(ctx, e, m, first, time.Minute))
	stopOperator(b, first)

	restartAfterOfflineChanges(b, e, m, f)
	restartWithNothingChanged(b, e, m)
}

// restartAfterOfflineChanges deletes and edits ConfigMaps while no operator
// runs, then times a restart until Git matches the cluster.
func restartAfterOfflineChanges(b *testing.B, e *benchEnv, m *mirror, f fleet) {
	ctx := context.Background()
	r := newReporter(b, "D restart, 50+50 offline")
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

	op, err := startOperator(e, m.name+"-changed")
	require.NoError(b, err)
	defer stopOperator(b, op)
	matched, err := m.remote.pollHeads(ctx, op, 100*time.Millisecond, 2*time.Minute,
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
	r.atMost("start to Git matching", seconds(matched.Sub(op.started)), "s", seconds(restartTarget))
	r.atMost("commits", float64(commitsAfter-commitsBefore), "", 1)
	r.usage(u)
	// Let the run finish its replay before the next restart.
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
}

// restartWithNothingChanged restarts the operator on a cluster Git already
// matches: once the target is Ready and a quiet period passed, the branch
// must not have moved.
func restartWithNothingChanged(b *testing.B, e *benchEnv, m *mirror) {
	ctx := context.Background()
	r := newReporter(b, "D restart, nothing changed")
	require.NoError(b, m.resetStatus(ctx, e))
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	op, err := startOperator(e, m.name+"-unchanged")
	require.NoError(b, err)
	defer stopOperator(b, op)
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
	ready := time.Since(op.started)
	time.Sleep(quietPeriod)
	u, err := op.usage()
	require.NoError(b, err)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	r.info("start to Ready", seconds(ready), "s")
	r.atMost("commits", float64(commitsAfter-commitsBefore), "", 0)
	r.usage(u)
}
