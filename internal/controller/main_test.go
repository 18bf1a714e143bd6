package controller_test

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// kube is the package's one API server, with the operator's CRDs
// installed. Tests isolate themselves by namespace.
var kube *harness.Kube

func TestMain(m *testing.M) {
	// Each test's manager logs through its own logger; this only silences
	// controller-runtime's warning that the global one was never set.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(harness.RunWithKube(m, harness.KubeOptions{}, &kube))
}
