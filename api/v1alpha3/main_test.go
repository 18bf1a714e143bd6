package v1alpha3_test

import (
	"os"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// kube is the control plane shared by this package's tests: the schema is
// the thing under test, and only a real API server applies it.
var kube *harness.Kube

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithKube(m, harness.KubeOptions{}, &kube))
}
