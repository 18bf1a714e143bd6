// Package chart tests the Helm chart in charts/gitops-reverser: it lints and
// renders it with the real Helm (a Go tool of this module), checks that the
// values schema refuses bad values, applies the rendered manifests to a real
// kube-apiserver, and runs the operator in process as the chart's
// ServiceAccount (impersonated), so a mirror works with exactly the chart's
// RBAC and fails visibly without it.
package chart

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// env is shared by the package's tests; each test uses its own release
// names and namespaces.
var env struct {
	helm string
	kube *harness.Kube
	git  *harness.GitServer
}

const (
	gitUser     = "mirror"
	gitPassword = "chart-s3cret"
)

func TestMain(m *testing.M) { harness.Exit(run(m)) }

func run(m *testing.M) (int, error) {
	var err error
	if env.helm, err = harness.HelmBinary(); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "chart-git-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	env.git, err = harness.StartGitServer(dir, harness.GitServerOptions{HTTPUsername: gitUser, HTTPPassword: gitPassword})
	if err != nil {
		return 0, err
	}
	defer env.git.Stop()
	// No CRDs from the harness: the chart's own crds/ are applied by the
	// tests, as helm install would.
	env.kube, err = harness.StartKube(harness.KubeOptions{SkipCRDs: true})
	if err != nil {
		return 0, err
	}
	defer env.kube.Stop()
	return m.Run(), nil
}

// chartDir is the chart under test.
func chartDir() string { return filepath.Join(harness.RepoRoot(), "charts", "gitops-reverser") }
