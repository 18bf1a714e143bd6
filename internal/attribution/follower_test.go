package attribution

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// scriptedTransport answers the n-th Follow of a stream with script(n).
type scriptedTransport struct {
	mu     sync.Mutex
	calls  map[facts.StreamKey]int
	sinces []time.Time
	script func(n int, ctx context.Context, stream facts.StreamKey, deliver func([]facts.Fact), gap func(int)) error
}

func (s *scriptedTransport) Publish(context.Context, facts.StreamKey, []facts.Fact) error { return nil }

func (s *scriptedTransport) Follow(ctx context.Context, stream facts.StreamKey, since time.Time,
	deliver func([]facts.Fact), gap func(lost int)) error {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[facts.StreamKey]int{}
	}
	s.calls[stream]++
	n := s.calls[stream]
	s.sinces = append(s.sinces, since)
	s.mu.Unlock()
	return s.script(n, ctx, stream, deliver, gap)
}

// TestTheFollowerFeedsTheIndexAndRetries: each stream is followed once
// however often it is ensured, from one TTL ago; a failed follow is
// counted, its gap reported, and retried after a backoff; what either
// follow delivered resolves; Stop ends every follow.
func TestTheFollowerFeedsTheIndexAndRetries(t *testing.T) {
	f := newFixture()
	following := make(chan facts.StreamKey, 4)
	transport := &scriptedTransport{script: func(n int, ctx context.Context, stream facts.StreamKey,
		deliver func([]facts.Fact), gap func(int)) error {
		if stream == configmaps && n == 1 {
			deliver([]facts.Fact{withUID(fact("first", "update", bob, 0), "u1", "5")})
			gap(2)
			return errors.New("connection reset")
		}
		// The retry re-delivers what the first follow did: filed once.
		deliver([]facts.Fact{withUID(fact("first", "update", bob, 0), "u1", "5"),
			withUID(fact("second", "update", carol, 0), "u2", "5")})
		following <- stream
		<-ctx.Done()
		return ctx.Err()
	}}
	var slept []time.Duration
	follower := &Follower{Transport: transport, TransportName: "memory", Index: f.index, Observer: f.obs,
		Clock: f.clock, MinBackoff: time.Second,
		Sleep: func(_ context.Context, d time.Duration) bool { slept = append(slept, d); return true }}

	follower.Ensure(configmaps)
	follower.Ensure(configmaps)
	follower.Ensure(secrets)
	require.ElementsMatch(t, []facts.StreamKey{configmaps, secrets}, []facts.StreamKey{<-following, <-following})

	for uid, actor := range map[string]facts.Actor{"u1": bob, "u2": carol} {
		got := f.resolver.Resolve(context.Background(), event(false, uid, "5", true))
		require.Equal(t, TierExact, got.Tier)
		require.Equal(t, actor, got.Actor)
	}
	follower.Stop()
	follower.Ensure(facts.StreamKey{Route: "prod", Resource: "pods"})

	require.Equal(t, map[facts.StreamKey]int{configmaps: 2, secrets: 1}, transport.calls)
	for _, since := range transport.sinces {
		require.Equal(t, t0.Add(-5*time.Minute), since)
	}
	require.Equal(t, 1, f.obs.errors)
	require.Equal(t, []int{2}, f.obs.gaps)
	require.Len(t, slept, 1)
	require.GreaterOrEqual(t, slept[0], time.Second)
	require.Equal(t, 4, f.index.Len(), "configmaps' two facts once each, and secrets' two under their own stream")
}

// TestRetryEndsTheBackoffOfAFailedFollow: a follow that failed waits out
// its backoff (an hour here, on a clock that never moves) unless Retry
// says the transport is back.
func TestRetryEndsTheBackoffOfAFailedFollow(t *testing.T) {
	f := newFixture()
	following := make(chan int, 2)
	transport := &scriptedTransport{script: func(n int, ctx context.Context, _ facts.StreamKey,
		_ func([]facts.Fact), _ func(int)) error {
		if n == 1 {
			return errors.New("connection refused")
		}
		following <- n
		<-ctx.Done()
		return ctx.Err()
	}}
	follower := &Follower{Transport: transport, TransportName: "redis", Index: f.index, Observer: f.obs,
		Clock: f.clock, MinBackoff: time.Hour}
	defer follower.Stop()
	follower.Ensure(configmaps)
	require.Eventually(t, f.clock.HasWaiters, 10*time.Second, time.Millisecond, "the failed follow waits out its backoff")
	follower.Retry()
	require.Equal(t, 2, <-following, "followed again without the clock moving")
}
