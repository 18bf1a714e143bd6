package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestAnAuditRouteOtherThanTheProvidersNameCarriesTheFacts: a control
// plane whose API server posts its audit events to /audit-webhook/edge,
// and a ClusterProvider named default whose spec.attribution.auditRoute is
// edge: alice's change arrives under that route and names her; the
// provider's own name is no route any more.
func TestAnAuditRouteOtherThanTheProvidersNameCarriesTheFacts(t *testing.T) {
	ingress := ingressElsewhere(t)
	webhook, err := harness.WriteAuditWebhookConfig(t.TempDir(), "https://"+ingress+"/audit-webhook/edge",
		env.audit.servingCA, env.audit.apiserverClient)
	require.NoError(t, err)
	useOwnControlPlane(t, harness.KubeOptions{AuditPolicyFile: env.audit.policyFile, AuditWebhookConfigFile: webhook,
		AuditBatchMaxWait: auditBatchMaxWait})
	apply(t, &v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}},
			Attribution: &v1alpha3.AttributionSpec{AuditRoute: "edge"}}})
	m := newMirror(t, "attr-route", "configmaps")
	startOperatorWith(t, withIngressAt(ingress, 10*time.Second))
	waitReady(t, m.ns, m.target)
	path := m.path + "/attr-route/configmaps/routed.yaml"

	require.NoError(t, actor(t, "alice", nil).Create(context.Background(), configMap(m.ns, "routed", map[string]string{"v": "1"})))
	eventually(t, "the change in Git", func() bool { return gitFile(t, m.repo, path) != "" })
	require.Equal(t, gitAuthor("alice"), authorOf(t, m, path), "\n%s", gitLog(t, m.repo))
	require.GreaterOrEqual(t, metricSumWhere(t, "gitopsreverser_audit_events_total",
		map[string]string{"outcome": "queued", "resource": "configmaps", "verb": "create"}), 1.0)
	require.Equal(t, http.StatusNotFound, postAudit(t, ingress, "default"), "no ClusterProvider has the route default")
}
