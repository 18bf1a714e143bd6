package v1alpha3_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// kube is the control plane shared by this package's tests: the schema is
// the thing under test, and only a real API server applies it.
var kube *harness.Kube

func TestMain(m *testing.M) {
	var err error
	kube, err = harness.StartKube(harness.KubeOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	kube.Stop()
	os.Exit(code)
}
