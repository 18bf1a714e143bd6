package mirror

import (
	"os"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

var kube *harness.Kube

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithKube(m, harness.KubeOptions{SkipCRDs: true}, &kube))
}
