package operator

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// quickBackoff keeps a test's waits short.
var quickBackoff = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Steps: 10, Cap: 100 * time.Millisecond}

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
			k, err := journalKey(ctx, kube.Client(), "default", quickBackoff)
			require.NoError(t, err)
			keys[i] = k
		})
	}
	wg.Wait()
	require.Len(t, keys[0], 32)
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, keys[0], keys[2])
	again, err := journalKey(ctx, kube.Client(), "default", quickBackoff)
	require.NoError(t, err)
	require.Equal(t, keys[0], again, "a restart reads the key, it does not make a new one")
}

// unavailableFirst answers the first n requests for Secrets 503, as an API
// server whose etcd is slow does, and sends the rest on.
type unavailableFirst struct {
	next    http.RoundTripper
	refused atomic.Int32
	n       int32
}

func (u *unavailableFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/secrets") && u.refused.Add(1) <= u.n {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcdserver: request timed out",` +
			`"reason":"ServiceUnavailable","code":503}`
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	return u.next.RoundTrip(r)
}

// TestAJournalKeyWaitsOutAnAPIServerThatCannotAnswerYet: a replica that
// starts while the API server answers 503 (the read, then the create) gets
// the key once it answers, instead of exiting; the key is the one kept.
func TestAJournalKeyWaitsOutAnAPIServerThatCannotAnswerYet(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	ctx := context.Background()
	require.NoError(t, kube.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}))

	cfg := kube.Config()
	flaky := &unavailableFirst{n: 3}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { flaky.next = rt; return flaky })
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)

	key, err := journalKey(ctx, c, "slow", quickBackoff)
	require.NoError(t, err)
	require.Len(t, key, 32)
	require.GreaterOrEqual(t, flaky.refused.Load(), int32(4), "the key came only after the 503s")
	again, err := journalKey(ctx, kube.Client(), "slow", quickBackoff)
	require.NoError(t, err)
	require.Equal(t, key, again, "the key the waiting replica got is the one kept")
}
