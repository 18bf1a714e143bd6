package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
			k, err := journalKey(ctx, kube.Client(), "default", quickBackoff, logr.Discard())
			require.NoError(t, err)
			keys[i] = k
		})
	}
	wg.Wait()
	require.Len(t, keys[0], 32)
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, keys[0], keys[2])
	again, err := journalKey(ctx, kube.Client(), "default", quickBackoff, logr.Discard())
	require.NoError(t, err)
	require.Equal(t, keys[0], again, "a restart reads the key, it does not make a new one")
}

// unavailable answers requests for Secrets 503, as an API server whose
// etcd is slow does: the first gets reads without passing them on, the
// first creates after passing them on (the Secret is made, the answer is
// lost). The rest go through.
type unavailable struct {
	next                 http.RoundTripper
	gets, creates        int32
	refusedGets, refused atomic.Int32
	madeButRefused       atomic.Int32
}

func (u *unavailable) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.Contains(r.URL.Path, "/secrets") {
		return u.next.RoundTrip(r)
	}
	switch {
	case r.Method == http.MethodGet && u.refusedGets.Add(1) <= u.gets:
	case r.Method == http.MethodPost && u.madeButRefused.Add(1) <= u.creates:
		resp, err := u.next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	default:
		return u.next.RoundTrip(r)
	}
	u.refused.Add(1)
	body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"etcdserver: request timed out",` +
		`"reason":"ServiceUnavailable","code":503}`
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// TestAJournalKeyWaitsOutAnAPIServerThatCannotAnswerYet: a replica that
// starts while the API server answers 503 to its read, and to a create it
// made, gets the key once it answers, instead of exiting: the key it made
// and lost the answer to, which is the one kept.
func TestAJournalKeyWaitsOutAnAPIServerThatCannotAnswerYet(t *testing.T) {
	kube, err := harness.StartKube(harness.KubeOptions{})
	require.NoError(t, err)
	t.Cleanup(kube.Stop)
	ctx := context.Background()
	require.NoError(t, kube.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}))

	cfg := kube.Config()
	flaky := &unavailable{gets: 2, creates: 1}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { flaky.next = rt; return flaky })
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)

	key, err := journalKey(ctx, c, "slow", quickBackoff, logr.Discard())
	require.NoError(t, err)
	require.Len(t, key, 32)
	require.Equal(t, int32(3), flaky.refused.Load(), "two reads and a create answered 503")
	again, err := journalKey(ctx, kube.Client(), "slow", quickBackoff, logr.Discard())
	require.NoError(t, err)
	require.Equal(t, key, again, "the key the waiting replica got is the one kept")
}

// TestOnlyTheAPIServersNoAnswerIsWaitedOut: an answer, or an error made on
// this side, ends the wait at once.
func TestOnlyTheAPIServersNoAnswerIsWaitedOut(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		wait bool
	}{
		"503":                  {err: apierrors.NewServiceUnavailable("etcd"), wait: true},
		"429":                  {err: apierrors.NewTooManyRequests("slow down", 1), wait: true},
		"a refused request":    {err: &url.Error{Op: "Get", URL: "https://api", Err: syscall.ECONNREFUSED}, wait: true},
		"404":                  {err: apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "k")},
		"403":                  {err: apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "k", errors.New("no"))},
		"a kind not in scheme": {err: runtime.NewNotRegisteredErrForKind("scheme", schema.GroupVersionKind{Kind: "Secret"})},
		"none":                 {},
	} {
		require.Equal(t, tc.wait, noAnswerYet(tc.err), name)
	}
}
