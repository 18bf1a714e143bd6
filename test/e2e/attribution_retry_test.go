package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestABatchTheAPIServerRetriesAfterAnOutageNamesTheAuthor: the ingress
// is out when the API server posts alice's create: a stand-in on the
// ingress address answers 503 and records the post. The ingress comes back
// (the address leads to the operator's ingress again) within the API
// server's retry backoff; the retried batch is the only one that reaches
// the operator, and its fact names alice as the author of the commit, which
// waited for it within a grace longer than the backoff.
func TestABatchTheAPIServerRetriesAfterAnOutageNamesTheAuthor(t *testing.T) {
	m := newMirror(t, "attr-retried", "configmaps")
	ingress := ingressElsewhere(t)
	startOperatorWith(t, withIngressAt(ingress, 30*time.Second))
	waitReady(t, m.ns, m.target)
	path := m.path + "/attr-retried/configmaps/retried.yaml"

	outage := startStandIn(t, http.StatusServiceUnavailable)
	require.NoError(t, actor(t, "alice", nil).Create(context.Background(), configMap(m.ns, "retried", map[string]string{"v": "1"})))
	outage.waitForEvent(t, "create", m.ns, "retried")
	outage.stop()
	require.Empty(t, gitFile(t, m.repo, path), "the change waits for its fact")
	require.Zero(t, metricSumWhere(t, "gitopsreverser_audit_events_total", map[string]string{"resource": "configmaps"}),
		"nothing reached the operator's ingress during the outage")

	forwardAudit(t, ingress)
	eventually(t, "the change in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	require.Equal(t, gitAuthor("alice"), authorOf(t, m, path), "the retried batch named the author:\n%s", gitLog(t, m.repo))
	require.GreaterOrEqual(t, metricSumWhere(t, "gitopsreverser_audit_events_total",
		map[string]string{"outcome": "queued", "resource": "configmaps", "verb": "create"}), 1.0, "the retried batch reached the ingress")
}
