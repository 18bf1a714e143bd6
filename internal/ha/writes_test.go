package ha_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/ha"
)

// owner is the owner side of a member as the engine would run it: on
// every view, Decide over branches and take or release.
type owner struct {
	mu      sync.Mutex
	owned   map[ha.BranchKey]bool
	version uint64 // of the view the owned set follows
	done    chan struct{}
}

func own(ctx context.Context, m *member, branches []ha.BranchKey) *owner {
	o := &owner{owned: map[ha.BranchKey]bool{}, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for v := range m.Views(ctx) {
			o.mu.Lock()
			take, release := ha.Decide(v, branches, o.owned)
			for _, k := range take {
				o.owned[k] = true
			}
			for _, k := range release {
				delete(o.owned, k)
			}
			o.version = v.Version
			o.mu.Unlock()
		}
	}()
	return o
}

// snapshot is what o owns and the view version it follows.
func (o *owner) snapshot() (map[ha.BranchKey]bool, uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.owned), o.version
}

// count waits for o to stop (its context ended) and says how many it owns.
func (o *owner) count() int {
	<-o.done
	return len(o.owned)
}

func TestALeaseIsWrittenAtMostOncePerRenewPeriodWhateverItOwns(t *testing.T) {
	ns := namespace(t)
	fast := timing{lease: 1500 * time.Millisecond, renew: time.Second, retry: 100 * time.Millisecond}
	a := start(t, ns, "pod-a", clock.RealClock{}, fast)
	ctx, cancel := context.WithCancel(context.Background())
	owned := own(ctx, a, keys(500))
	waitView(t, a, "a is live", members("pod-a"))

	began := time.Now()
	before := a.transport.writes.Load()
	require.Eventually(t, func() bool { return a.transport.writes.Load()-before >= 20 }, 60*time.Second, 10*time.Millisecond)
	writes := a.transport.writes.Load() - before
	periods := time.Since(began) / fast.retry
	// Writes are at least a period apart, so a slow machine only makes
	// fewer of them: this bound holds however loaded it is.
	require.LessOrEqual(t, writes, int64(periods)+1, "%d writes in %d periods", writes, periods)
	cancel()
	require.Equal(t, 500, owned.count(), "alone, a owns every branch, with one Lease")
}

// BenchmarkLeaseWrites measures the Lease writes of one replica that owns
// 500 branches, at controller-runtime's cadence (a renewal every 2 s),
// over b.N renew periods: run it with -benchtime 10x. It reports the
// writes per period (target: at most 1) and per second, and the reads
// (the informer's list and watch) beside them.
func BenchmarkLeaseWrites(b *testing.B) {
	ns := namespace(b)
	a := start(b, ns, "pod-a", clock.RealClock{}, timing{lease: ha.DefaultLeaseDuration, renew: ha.DefaultRenewDeadline, retry: ha.DefaultRetryPeriod})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	owned := own(ctx, a, keys(500))
	waitView(b, a, "a is live", func(v ha.View) bool { return v.SelfLive })

	b.ResetTimer()
	before, reads := a.transport.writes.Load(), a.transport.reads.Load()
	began := time.Now()
	// The sentinel is the b.N-th renewal: the periods it took are read off
	// the clock after it, so a loaded machine that renews late shows as
	// fewer writes per period, never more.
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	deadline := began.Add(time.Duration(2*b.N+2) * ha.DefaultRetryPeriod)
	for a.transport.writes.Load()-before < int64(b.N) {
		if now := <-poll.C; now.After(deadline) {
			b.Fatalf("%d renewals in %s", a.transport.writes.Load()-before, now.Sub(began))
		}
	}
	elapsed := time.Since(began)
	writes := a.transport.writes.Load() - before
	b.StopTimer()
	cancel()
	if n := owned.count(); n != 500 {
		b.Fatalf("owns %d branches, want 500", n)
	}
	b.ReportMetric(float64(writes)/(float64(elapsed)/float64(ha.DefaultRetryPeriod)), "writes/period")
	b.ReportMetric(float64(writes)/elapsed.Seconds(), "writes/s")
	b.ReportMetric(float64(a.transport.reads.Load()-reads), "reads")
	b.ReportMetric(500, "branches")
}
