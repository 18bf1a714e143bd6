package credentials_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/configbutler/gitops-reverser/test/harness"
)

var kube *harness.Kube

func TestMain(m *testing.M) {
	var err error
	if kube, err = harness.StartKube(harness.KubeOptions{SkipCRDs: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	kube.Stop()
	os.Exit(code)
}
