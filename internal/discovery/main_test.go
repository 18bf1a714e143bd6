package discovery_test

import (
	"os"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// kube is a real etcd + kube-apiserver with the operator's CRDs installed,
// shared by the tests that prove the catalog against real discovery.
var kube *harness.Kube

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithKube(m, harness.KubeOptions{}, &kube))
}
