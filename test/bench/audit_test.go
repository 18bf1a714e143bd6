package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// benchAuditBatchMaxWait is the API server's audit batch delay: the value
// docs/attribution.md tells a cluster admin to set.
const benchAuditBatchMaxWait = time.Second

// benchAudit is where the shared API server posts audit events (over
// mTLS), and what an attributing operator serves its ingress with.
type benchAudit struct {
	addr                            string
	certFile, keyFile, clientCAFile string
	policyFile, webhookFile         string
}

// auditedResource is the only resource the benchmark's API server audits:
// scenario G's, which no other scenario writes, so the other scenarios'
// API server posts nothing to a port where no ingress listens.
const auditedResource = "serviceaccounts"

// prepareAudit writes the certificates, the webhook kubeconfig and the
// policy before the API server starts.
func prepareAudit(dir string) (benchAudit, error) {
	dir = filepath.Join(dir, "audit")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return benchAudit{}, fmt.Errorf("creating the audit directory: %w", err)
	}
	port, err := harness.FreePort()
	if err != nil {
		return benchAudit{}, err
	}
	serving, err := harness.NewCA("bench audit ingress")
	if err != nil {
		return benchAudit{}, err
	}
	clients, err := harness.NewCA("bench audit clients")
	if err != nil {
		return benchAudit{}, err
	}
	server, err := serving.Server(dir, "ingress", "127.0.0.1")
	if err != nil {
		return benchAudit{}, err
	}
	apiserver, err := clients.Client(dir, "apiserver", "kube-apiserver")
	if err != nil {
		return benchAudit{}, err
	}
	a := benchAudit{addr: fmt.Sprintf("127.0.0.1:%d", port), certFile: server.CertFile, keyFile: server.KeyFile}
	if a.clientCAFile, err = clients.WriteCert(dir, "client-ca.crt"); err != nil {
		return benchAudit{}, err
	}
	if a.webhookFile, err = harness.WriteAuditWebhookConfig(dir, "https://"+a.addr+"/audit-webhook/default", serving.CertPEM, apiserver); err != nil {
		return benchAudit{}, err
	}
	a.policyFile = filepath.Join(dir, "policy.yaml")
	policy := `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
  - level: RequestResponse
    verbs: [create, update, patch, delete, deletecollection]
    resources: [{group: "", resources: [` + auditedResource + `]}]
  - level: None
`
	if err := os.WriteFile(a.policyFile, []byte(policy), 0o600); err != nil {
		return benchAudit{}, fmt.Errorf("writing the audit policy: %w", err)
	}
	return a, nil
}

// operatorArgs are the flags that make an operator run attribute.
func (a benchAudit) operatorArgs() []string {
	return []string{"--author-attribution=true", "--audit-bind-address=" + a.addr, "--audit-cert-file=" + a.certFile,
		"--audit-key-file=" + a.keyFile, "--audit-client-ca-file=" + a.clientCAFile}
}
