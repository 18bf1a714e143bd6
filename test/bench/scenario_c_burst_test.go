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
func BenchmarkBurstUpdate(b *testing.B) {
	e := sharedEnv(b)
	ctx := context.Background()
	r := newReporter(b, "C burst of 2,000 updates")
	m, f := newFleetMirror(b, e, "burst", mirrorOptions{})
	op, _ := startOnFleet(b, e, m, f, m.name)
	defer stopOperator(b, op)
	require.NoError(b, waitReady(ctx, e, m, op, time.Minute))
	before, err := op.scrape(ctx)
	require.NoError(b, err)
	cpuBefore, err := op.usage()
	require.NoError(b, err)
	commitsBefore, err := m.remote.commitCount(ctx)
	require.NoError(b, err)

	marker := "burst-marker-" + m.name
	start := time.Now()
	require.NoError(b, inParallel(ctx, f.size(), apiWorkers, func(ctx context.Context, i int) error {
		return f.setValue(ctx, e.client(), i, fmt.Sprintf("%s-%04d", marker, i))
	}))
	writes := time.Since(start)
	landed := 0
	seen, waitErr := m.remote.pollHeads(ctx, op, 200*time.Millisecond, 3*time.Minute,
		func(ctx context.Context, head string) (bool, error) {
			n, err := m.remote.filesContaining(ctx, head, marker)
			landed = n
			return n == f.size(), err
		})
	u, err := op.usage()
	require.NoError(b, err)
	after, err := op.scrape(ctx)
	require.NoError(b, err)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)

	if waitErr == nil {
		r.atMost("first update to all in Git", seconds(seen.Sub(start)), "s", seconds(burstTarget))
		// The commit window is a rolling silence: it closes this long
		// after the burst's last event.
		r.info("last update to all in Git", seconds(seen.Sub(start.Add(writes))), "s")
	} else {
		b.Errorf("not every update reached Git: %v", waitErr)
	}
	r.info("API writes took", seconds(writes), "s")
	r.atMost("updates not in Git (dropped)", float64(f.size()-landed), "", 0)
	r.info("MODIFIED watch events", after.sum("gitopsreverser_watch_events_total", `type="MODIFIED"`)-
		before.sum("gitopsreverser_watch_events_total", `type="MODIFIED"`), "")
	// A labeled counter is exported only once it has a child, so a family
	// that never counted is absent and sums to zero.
	r.atMost("watch reconnects", after.sum("gitopsreverser_watch_reconnects_total"), "", 0)
	r.atMost("watch 410 Gone", after.sum("gitopsreverser_watch_gone_total"), "", 0)
	r.info("commits", float64(commitsAfter-commitsBefore), "")
	r.info("operator CPU during the burst", u.CPUSeconds-cpuBefore.CPUSeconds, "s")
	r.usage(u)
}
