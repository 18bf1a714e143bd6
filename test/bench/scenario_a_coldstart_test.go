package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkColdStart is scenario A: 2,000 ConfigMaps in 20 namespaces (5
// keys each) exist before the operator starts, the repository is empty, and
// the figure is the time from starting the process to the remote holding
// all 2,000 files.
func BenchmarkColdStart(b *testing.B) {
	e := sharedEnv(b)
	ctx := context.Background()
	r := newReporter(b, "A cold start")
	m, f := newFleetMirror(b, e, "cold", mirrorOptions{})
	op, reached := startOnFleet(b, e, m, f, m.name)
	defer stopOperator(b, op)
	u, err := op.usage()
	require.NoError(b, err)
	commits, err := m.remote.commitCount(ctx)
	require.NoError(b, err)

	r.atMost("start to all files in Git", seconds(reached.Sub(op.started)), "s", seconds(coldStartTarget))
	r.info("commits", float64(commits), "")
	r.usage(u)
}
