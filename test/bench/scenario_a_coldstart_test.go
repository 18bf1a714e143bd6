package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkColdStart is scenario A: 2,000 ConfigMaps in 20 namespaces (5
// keys each) exist before the operator starts, the repository is empty, and
// the figure is the time from starting the process to the remote holding
// all 2,000 files. One sub-benchmark per forge.
func BenchmarkColdStart(b *testing.B) { forEachForge(b, coldStart) }

func coldStart(b *testing.B, fk forgeKind) {
	e := sharedEnv(b)
	ctx := context.Background()
	r := newReporter(b, "A cold start", fk)
	m, f := newFleetMirror(b, e, "cold", mirrorOptions{forge: fk})
	base, err := startMark(e, m)
	require.NoError(b, err)
	op, reached := startOnFleet(b, e, m, f, m.name)
	defer stopOperator(b, op)
	u, err := op.usage()
	require.NoError(b, err)
	commits, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	requests, err := markRequests(ctx, e, op, m, base, commits)
	require.NoError(b, err)

	r.atMost("start to all files in Git", seconds(reached.Sub(op.started)), "s", seconds(coldStartTarget))
	r.info("commits", float64(commits), "")
	reportRequests(r, m, "", base, requests, commits, 0)
	r.usage(u)
}
