package ha_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/ha"
	"github.com/configbutler/gitops-reverser/test/harness"
)

var kube *harness.Kube

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithKube(m, harness.KubeOptions{SkipCRDs: true}, &kube))
}

// transport counts a member's Lease writes and can hang its requests, as
// an API server that stopped answering would.
type transport struct {
	next   http.RoundTripper
	writes atomic.Int64
	reads  atomic.Int64
	// hang makes requests wait for their context; refuse fails them at
	// once, as a stopped API server's refused connections do.
	hang   atomic.Bool
	refuse atomic.Bool
}

var errRefused = errors.New("connection refused (test)")

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.hang.Load() {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	if t.refuse.Load() {
		return nil, errRefused
	}
	if strings.Contains(req.URL.Path, "/leases") {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			t.writes.Add(1)
		case http.MethodGet:
			t.reads.Add(1)
		}
	}
	return t.next.RoundTrip(req)
}

// member is one Membership running in the test, with its own client.
type member struct {
	*ha.Membership
	transport *transport
	stop      context.CancelFunc
	done      chan struct{}
}

// timing is a short cadence for the tests, and what the member publishes
// of its store contact (nothing when nil).
type timing struct {
	lease, renew, retry time.Duration
	storeContact        func() time.Time
}

var short = timing{lease: 3 * time.Second, renew: 2 * time.Second, retry: 500 * time.Millisecond}

func namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ha-"}}
	created, err := clientset(t, nil).CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	require.NoError(t, err)
	return created.Name
}

func clientset(t testing.TB, wrap func(http.RoundTripper) http.RoundTripper) kubernetes.Interface {
	t.Helper()
	return clientsetFrom(t, kube.Config(), wrap)
}

func clientsetFrom(t testing.TB, cfg *rest.Config, wrap func(http.RoundTripper) http.RoundTripper) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg) // Wrap adds to the config: each member its own
	if wrap != nil {
		cfg.Wrap(wrap)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: count what the member asks for
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// start runs a member until the test ends (or stop).
func start(t testing.TB, ns, id string, c clock.Clock, tm timing) *member {
	t.Helper()
	return startAs(t, kube.Config(), ns, id, c, tm)
}

// startAs runs a member with the identity of cfg.
func startAs(t testing.TB, cfg *rest.Config, ns, id string, c clock.Clock, tm timing) *member {
	t.Helper()
	tr := &transport{}
	cs := clientsetFrom(t, cfg, func(rt http.RoundTripper) http.RoundTripper { tr.next = rt; return tr })
	m, err := ha.New(ha.Config{Client: cs, Namespace: ns, Identity: id, Clock: c,
		LeaseDuration: tm.lease, RenewDeadline: tm.renew, RetryPeriod: tm.retry, StoreContact: tm.storeContact})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	mb := &member{Membership: m, transport: tr, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(mb.done)
		_ = m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-mb.done
	})
	return mb
}

// waitView waits for the first view of m that satisfies ok. The deadline
// only ends a test that would hang; no duration is asserted.
func waitView(t testing.TB, m *member, what string, ok func(ha.View) bool) ha.View {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		v, changed := m.Current()
		if v.Version > 0 && ok(v) {
			return v
		}
		select {
		case <-changed:
		case <-deadline:
			require.FailNow(t, "no view of "+v.Self+" where "+what, "last: %+v", v)
		}
	}
}

func members(want ...string) func(ha.View) bool {
	return func(v ha.View) bool {
		if len(v.Members) != len(want) {
			return false
		}
		for i := range want {
			if v.Members[i] != want[i] {
				return false
			}
		}
		return true
	}
}

// stepUntil advances c in small steps until cond holds: a timer re-armed
// just after a step fires at a later one, so no step count is assumed.
func stepUntil(t *testing.T, c interface{ Step(time.Duration) }, cond func() bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		if cond() {
			return true
		}
		c.Step(50 * time.Millisecond)
		return cond()
	}, 60*time.Second, 10*time.Millisecond)
}
