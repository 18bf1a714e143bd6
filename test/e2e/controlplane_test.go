package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// useOwnControlPlane runs the rest of the test against a control plane of
// its own, started with opts: env.kube is that one until the test ends
// (the suite's tests run one after another).
func useOwnControlPlane(t *testing.T, opts harness.KubeOptions) {
	t.Helper()
	kube, err := harness.StartKube(opts)
	require.NoError(t, err)
	shared := env.kube
	env.kube = kube
	t.Cleanup(func() {
		env.kube = shared
		kube.Stop()
	})
}
