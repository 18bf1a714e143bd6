package harness

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AuditPolicyFile is the audit policy the chart ships for attribution
// (charts/gitops-reverser/files/audit-policy.yaml): tests give the API
// server exactly what docs/attribution.md tells a cluster admin to give
// theirs.
func AuditPolicyFile() string {
	return filepath.Join(RepoRoot(), "charts", "gitops-reverser", "files", "audit-policy.yaml")
}

// WriteAuditWebhookConfig writes the kubeconfig kube-apiserver's audit
// webhook backend reads (--audit-webhook-config-file) to dir: it posts to
// url, trusts serverCA for the server's certificate and presents client
// (a certificate the receiver's client CA signed). It returns the path.
func WriteAuditWebhookConfig(dir, url string, serverCA []byte, client Pair) (string, error) {
	encode := base64.StdEncoding.EncodeToString
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
  - name: gitops-reverser-audit
    cluster:
      server: %q
      certificate-authority-data: %s
users:
  - name: kube-apiserver
    user:
      client-certificate-data: %s
      client-key-data: %s
contexts:
  - name: audit
    context: {cluster: gitops-reverser-audit, user: kube-apiserver}
current-context: audit
`, url, encode(serverCA), encode(client.CertPEM), encode(client.KeyPEM))
	path := filepath.Join(dir, "audit-webhook.kubeconfig")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return "", fmt.Errorf("writing the audit webhook kubeconfig: %w", err)
	}
	return path, nil
}

// AuditPolicyIn is the chart's audit policy (AuditPolicyFile, proven
// against the API server in this package) with its RequestResponse rule
// limited to namespaces: a suite's API server then posts only its
// attribution tests' writes, never the other tests', to an ingress that
// most of the time does not listen.
func AuditPolicyIn(namespaces []string) string {
	return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
  - level: None
    verbs: [get, list, watch]
  - level: None
    resources:
      - {group: "", resources: [events, "*/status"]}
      - {group: coordination.k8s.io, resources: [leases]}
  - level: RequestResponse
    verbs: [create, update, patch, delete, deletecollection]
    namespaces: [` + strings.Join(namespaces, ", ") + `]
  - level: None
`
}
