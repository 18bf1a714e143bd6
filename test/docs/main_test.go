package docs

import (
	"fmt"
	"os"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// kube is the package's control plane, with the operator's CRDs installed.
var kube *harness.Kube

func TestMain(m *testing.M) {
	var err error
	if kube, err = harness.StartKube(harness.KubeOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	kube.Stop()
	os.Exit(code)
}
