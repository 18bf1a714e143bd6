// Package e2e runs the whole operator in process against a real
// kube-apiserver and a real Git remote, and asserts on what lands in Git.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// env is shared by the package's tests: one control plane and one Git
// server; each test uses its own namespaces and repositories.
var env struct {
	kube *harness.Kube
	git  *harness.GitServer
	// audit is where the API server posts the audit events of the
	// attribution tests' namespaces: an operator started with attribution
	// serves its ingress there.
	audit auditSetup
}

const (
	gitUser     = "mirror"
	gitPassword = "s3cret-token"
)

func TestMain(m *testing.M) { harness.Exit(run(m)) }

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "e2e-git-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	env.git, err = harness.StartGitServer(dir, harness.GitServerOptions{HTTPUsername: gitUser, HTTPPassword: gitPassword})
	if err != nil {
		return 0, err
	}
	defer env.git.Stop()
	if env.audit, err = prepareAudit(dir); err != nil {
		return 0, err
	}
	env.kube, err = harness.StartKube(harness.KubeOptions{AuditPolicyFile: env.audit.policyFile,
		AuditWebhookConfigFile: env.audit.webhookFile, AuditBatchMaxWait: auditBatchMaxWait,
		ExtraFlags: map[string][]string{"audit-webhook-initial-backoff": {auditInitialBackoff.String()}}})
	if err != nil {
		return 0, err
	}
	defer env.kube.Stop()
	defer func() {
		if giteaServer.g != nil {
			giteaServer.g.Stop()
		}
	}()
	code := m.Run()
	if code == 0 {
		code = scanForSecretLeaks()
	}
	return code, nil
}

// scanForSecretLeaks fails the suite when any repository a test wrote holds
// a Secret value in plaintext (sensitive objects reach Git only
// encrypted), or when the operators' log or any Event names one.
func scanForSecretLeaks() int {
	if code := scanLogAndEvents(); code != 0 {
		return code
	}
	roots := []string{env.git.Root}
	if giteaServer.dir != "" {
		roots = append(roots, giteaServer.dir)
	}
	leaks, repos, err := plaintextSecretLeaks(roots...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scanning the suite's repositories for Secret values:", err)
		return 1
	}
	for _, leak := range leaks {
		fmt.Fprintln(os.Stderr, "SECRET IN PLAINTEXT:", leak)
	}
	if len(leaks) > 0 {
		return 1
	}
	fmt.Printf("no Secret value in plaintext in any object of the %d repositories the suite wrote\n", repos)
	return 0
}
