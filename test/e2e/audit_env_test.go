package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/configbutler/gitops-reverser/internal/operator"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// auditBatchMaxWait is the API server's audit batch delay in the suite:
// the docs' recommended 1 s would do, shorter keeps the tests quick.
const auditBatchMaxWait = 300 * time.Millisecond

// auditInitialBackoff is how long the API server waits before it posts a
// failed batch again (--audit-webhook-initial-backoff, 10 s by default);
// each later retry waits 1.5 times longer, five attempts in all, each
// ±20%. Shorter than the default keeps the retry tests quick.
const auditInitialBackoff = 2 * time.Second

// attributionNamespaces are the only namespaces whose writes the suite's
// API server audits, so the other tests' writes post nothing to a port
// where, most of the time, no ingress listens.
var attributionNamespaces = []string{"attr-authors", "attr-two-actors", "attr-finalizer", "attr-collection",
	"attr-custom", "attr-noop-apply", "attr-refused", "attr-history", "attr-webhook-down", "attr-concurrency",
	"attr-late-fact", "attr-restart", "attr-late-delete", "attr-down-delete", "attr-redis-outage", "attr-retried", "attr-reordered",
	"attr-own-credentials", "attr-replay", "attr-route", "attr-rule-deleted", "attr-status", "cr-alice", "cr-mismatch", "cr-delay", "cr-conflict"}

// auditSetup is the suite's audit webhook: the ingress address the API
// server posts to, and the files an attributing operator serves it with.
type auditSetup struct {
	addr                    string
	certFile, keyFile       string
	clientCAFile            string
	policyFile, webhookFile string
	// servingCA signed the ingress's certificate and apiserverClient is
	// the API server's client certificate: a test posting to an ingress
	// as the API server would uses both.
	servingCA       []byte
	apiserverClient harness.Pair
}

// prepareAudit makes the CAs and certificates (the ingress's serving
// certificate, the API server's client certificate), the webhook
// kubeconfig and the policy, before the API server starts.
func prepareAudit(dir string) (auditSetup, error) {
	port, err := harness.FreePort()
	if err != nil {
		return auditSetup{}, err
	}
	serving, err := harness.NewCA("e2e audit ingress")
	if err != nil {
		return auditSetup{}, err
	}
	clients, err := harness.NewCA("e2e audit clients")
	if err != nil {
		return auditSetup{}, err
	}
	server, err := serving.Server(dir, "audit-ingress", "127.0.0.1")
	if err != nil {
		return auditSetup{}, err
	}
	apiserver, err := clients.Client(dir, "apiserver-audit", "kube-apiserver")
	if err != nil {
		return auditSetup{}, err
	}
	a := auditSetup{addr: fmt.Sprintf("127.0.0.1:%d", port), certFile: server.CertFile, keyFile: server.KeyFile,
		servingCA: serving.CertPEM, apiserverClient: apiserver}
	if a.clientCAFile, err = clients.WriteCert(dir, "audit-client-ca.crt"); err != nil {
		return auditSetup{}, err
	}
	if a.webhookFile, err = harness.WriteAuditWebhookConfig(dir, "https://"+a.addr+"/audit-webhook/default", serving.CertPEM, apiserver); err != nil {
		return auditSetup{}, err
	}
	a.policyFile = filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(a.policyFile, []byte(suitePolicy()), 0o600); err != nil {
		return auditSetup{}, fmt.Errorf("writing the audit policy: %w", err)
	}
	return a, nil
}

// suitePolicy is the chart's audit policy with its RequestResponse rule
// limited to attributionNamespaces.
func suitePolicy() string { return harness.AuditPolicyIn(attributionNamespaces) }

// withAttribution is a startOperatorWith tune: the operator serves the
// suite's audit ingress and names the authors of live changes.
func withAttribution(grace time.Duration) func(*operator.Options) {
	return func(o *operator.Options) {
		o.Attribution = &operator.AttributionOptions{ListenAddr: env.audit.addr, CertFile: env.audit.certFile,
			KeyFile: env.audit.keyFile, ClientCAFile: env.audit.clientCAFile, Transport: operator.TransportMemory,
			Replicas: 1, Grace: grace}
	}
}
