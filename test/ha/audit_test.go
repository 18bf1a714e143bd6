package ha

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// attrName names the attribution test's repository, Redis prefix and
// namespaces: its branches mirror attr-0 … attr-<attrBranches-1>.
const (
	attrName     = "attr"
	attrBranches = 3
)

// auditedNamespaces are the only namespaces whose writes the suite's API
// server audits: the attribution test's. The other tests' writes post
// nothing, so the balancer, which has no replica to forward to while they
// run, sees no traffic from them.
func auditedNamespaces() []string {
	var out []string
	for i := range attrBranches {
		out = append(out, fmt.Sprintf("%s-%d", attrName, i))
	}
	return out
}

// auditSetup is the suite's audit webhook: the API server posts to the
// balancer over mTLS, and every attributing replica serves its ingress
// with the same certificate (a Service's pods share one Secret).
type auditSetup struct {
	balancer                        *balancer
	certFile, keyFile, clientCAFile string
	policyFile, webhookFile         string
}

// auditBatchMaxWait is the API server's audit batch delay: the docs'
// recommended 1 s would do, shorter keeps the test quick.
const auditBatchMaxWait = 300 * time.Millisecond

// auditInitialBackoff is how long the API server waits before it posts a
// failed batch again (10 s by default): a batch that met a replica as it
// stopped is posted again, through the balancer to another, well within
// the replicas' attribution grace.
const auditInitialBackoff = time.Second

// prepareAudit starts the balancer and writes the certificates, the
// webhook kubeconfig and the policy, before the API server starts.
func prepareAudit(dir string) (*auditSetup, error) {
	dir = filepath.Join(dir, "audit")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the audit directory: %w", err)
	}
	serving, err := harness.NewCA("ha audit ingress")
	if err != nil {
		return nil, err
	}
	clients, err := harness.NewCA("ha audit clients")
	if err != nil {
		return nil, err
	}
	server, err := serving.Server(dir, "ingress", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	apiserver, err := clients.Client(dir, "apiserver", "kube-apiserver")
	if err != nil {
		return nil, err
	}
	a := &auditSetup{certFile: server.CertFile, keyFile: server.KeyFile}
	if a.clientCAFile, err = clients.WriteCert(dir, "client-ca.crt"); err != nil {
		return nil, err
	}
	if a.balancer, err = startBalancer(); err != nil {
		return nil, fmt.Errorf("starting the audit balancer: %w", err)
	}
	url := "https://" + a.balancer.Addr() + "/audit-webhook/default"
	if a.webhookFile, err = harness.WriteAuditWebhookConfig(dir, url, serving.CertPEM, apiserver); err != nil {
		a.balancer.close()
		return nil, err
	}
	a.policyFile = filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(a.policyFile, []byte(harness.AuditPolicyIn(auditedNamespaces())), 0o600); err != nil {
		a.balancer.close()
		return nil, fmt.Errorf("writing the audit policy: %w", err)
	}
	return a, nil
}

// kubeOptions turn on the API server's audit webhook backend.
func (a *auditSetup) kubeOptions() harness.KubeOptions {
	return harness.KubeOptions{AuditPolicyFile: a.policyFile, AuditWebhookConfigFile: a.webhookFile,
		AuditBatchMaxWait: auditBatchMaxWait,
		ExtraFlags:        map[string][]string{"audit-webhook-initial-backoff": {auditInitialBackoff.String()}}}
}

// operatorArgs are the flags that make a replica attribute: it serves the
// audit ingress on ingress, and a live change waits up to grace for its
// fact, which reaches it through Redis whichever replica received it.
func (a *auditSetup) operatorArgs(ingress string, grace time.Duration) []string {
	return []string{"--author-attribution=true", "--author-attribution-transport=redis",
		"--author-attribution-grace=" + grace.String(), "--audit-bind-address=" + ingress,
		"--audit-cert-file=" + a.certFile, "--audit-key-file=" + a.keyFile, "--audit-client-ca-file=" + a.clientCAFile}
}
