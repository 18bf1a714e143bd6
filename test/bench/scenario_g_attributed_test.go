package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// editorName is the person scenario G's edits are made as (impersonated
// by the benchmark's admin identity, so the audit event names them).
const editorName = "bench-editor"

// BenchmarkEditToCommitAttributed is scenario G: B back to back with
// attribution on. The API server posts its audit events (batch mode, a 1 s
// batch wait as docs/attribution.md asks, mTLS) to the operator's ingress,
// and every commit must be authored by the person who made the edit. The
// p50 target is B's plus the batch wait. Git forge only: the forge's part
// is B's.
func BenchmarkEditToCommitAttributed(b *testing.B) {
	e := sharedEnv(b)
	if e.profileDir != "" {
		b.Skip("the profiled build runs configured-author mode only")
	}
	ctx := context.Background()
	const samples = 20
	r := newReporter(b, "G attributed edits", forgeGit)
	name := uniqueName("attributed")
	m, err := newMirror(ctx, e, name, mirrorOptions{commitWindow: latencyCommitWindow, resource: auditedResource})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, m.retire(ctx, e)) })
	editor, err := e.kube.ClientAs(editorName, "system:masters")
	require.NoError(b, err)
	probe := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "probe",
		Annotations: map[string]string{"edit": "initial"}}}
	require.NoError(b, editor.Create(ctx, probe))
	file := name + "/serviceaccounts/probe.yaml"

	op, err := startOperatorArgs(e, name, e.audit.operatorArgs()...)
	require.NoError(b, err)
	defer stopOperator(b, op)
	before, commitsBefore, oneCommit := latencyBaseline(b, r, e, m, op, file)

	latencies := make([]time.Duration, 0, samples)
	authored := 0
	for i := range samples {
		value := fmt.Sprintf("edit-%d-of-%s", i, name)
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"edit": value}}})
		require.NoError(b, err)
		start := time.Now()
		require.NoError(b, editor.Patch(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "probe"}},
			client.RawPatch(types.MergePatchType, patch)))
		seen, err := pollHeads(ctx, m.remote, op, latencyPoll, editTimeout, fileContains(m, file, value))
		require.NoError(b, err, "waiting for edit %d in Git", i)
		latencies = append(latencies, seen.Sub(start))
		if author, err := m.remote.(bareRemote).lastAuthor(ctx, file); err == nil && strings.HasPrefix(author, editorName+" ") {
			authored++
		}
	}
	u, err := op.usage()
	require.NoError(b, err)
	commitsAfter, err := m.remote.commitCount(ctx)
	require.NoError(b, err)
	after, err := markRequests(ctx, e, op, m, before, commitsAfter-commitsBefore)
	require.NoError(b, err)
	reportLatency(r, latencies, oneCommit, benchAuditBatchMaxWait, commitStats(before.metrics, after.metrics))
	r.atMost("edits not authored by their editor", float64(samples-authored), "", 0)
	r.info("commits per edit", float64(commitsAfter-commitsBefore)/float64(samples), "")
	r.usage(u)
}
