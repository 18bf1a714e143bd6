package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDuplicateAndReorderedBatchesNameTheRightAuthors: alice creates a
// ConfigMap and bob updates it; the API server's two batches (captured by
// a stand-in) reach the operator's real ingress in reverse order, then
// each again, then both in one list. Each change is committed with its own
// author, and the index files each fact once.
func TestDuplicateAndReorderedBatchesNameTheRightAuthors(t *testing.T) {
	m := newMirror(t, "attr-reordered", "configmaps")
	ingress := ingressElsewhere(t)
	startOperatorWith(t, withIngressAt(ingress, 30*time.Second))
	waitReady(t, m.ns, m.target)
	capture := startStandIn(t, http.StatusOK)
	ctx := context.Background()
	path := m.path + "/attr-reordered/configmaps/shared.yaml"

	require.NoError(t, actor(t, "alice", nil).Create(ctx, configMap(m.ns, "shared", map[string]string{"v": "1"})))
	created := capture.waitForEvent(t, "create", m.ns, "shared")
	bob := actor(t, "bob", nil)
	var cm corev1.ConfigMap
	require.NoError(t, bob.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: "shared"}, &cm))
	cm.Data["v"] = "2"
	require.NoError(t, bob.Update(ctx, &cm))
	updated := capture.waitForEvent(t, "update", m.ns, "shared")
	capture.stop()
	require.Empty(t, gitFile(t, m.repo, path), "both changes wait for their facts")

	for _, batch := range [][]json.RawMessage{{updated}, {created}, {created}, {updated}, {updated, created}} {
		require.Equal(t, http.StatusOK, postAudit(t, ingress, "default", batch...))
	}
	eventually(t, "bob's change in Git", func() bool { return containsLine(gitFile(t, m.repo, path), `  v: "2"`) })

	authors, err := env.git.Git(m.repo, "log", "--reverse", "--format=%an <%ae>", "main", "--", path)
	require.NoError(t, err)
	require.Equal(t, []string{gitAuthor("alice"), gitAuthor("bob")}, strings.Split(authors, "\n"), "\n%s", gitLog(t, m.repo))
	require.Equal(t, 6.0, metricSumWhere(t, "gitopsreverser_audit_events_total",
		map[string]string{"outcome": "queued", "resource": "configmaps"}), "every posted event was accepted")
	require.Equal(t, 2.0, metricSumWhere(t, "gitopsreverser_attribution_facts_total", map[string]string{"op": "written"}),
		"the index filed each fact once")
}
