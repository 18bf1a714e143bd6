package operator

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// Replicas starting together all end with the one key the first of them
// made, so any of them can open what another sealed.
func TestReplicasStartingTogetherShareOneJournalKey(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	ctx := context.Background()

	keys := make([][]byte, 3)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := journalKey(ctx, kube.Client(), "default")
			require.NoError(t, err)
			keys[i] = k
		})
	}
	wg.Wait()
	require.Len(t, keys[0], 32)
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, keys[0], keys[2])
	again, err := journalKey(ctx, kube.Client(), "default")
	require.NoError(t, err)
	require.Equal(t, keys[0], again, "a restart reads the key, it does not make a new one")
}
