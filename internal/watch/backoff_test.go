package watch_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/configbutler/gitops-reverser/internal/watch"
)

// TestFailedConnectsBackOffWithJitter points a stream at an address where
// no API server listens (as during an API server restart): each failed
// connect waits longer, doubling from MinBackoff to MaxBackoff, and every
// wait carries jitter, so streams that failed together spread out.
func TestFailedConnectsBackOffWithJitter(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := listener.Addr().String()
	require.NoError(t, listener.Close()) // nothing listens there now
	client, err := dynamic.NewForConfig(&rest.Config{Host: "http://" + addr})
	require.NoError(t, err)

	const base, limit = 100 * time.Millisecond, 800 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var delays []time.Duration
	stream := &watch.Stream{
		Client: client, Scope: watch.Scope{GVR: configMaps, Namespace: "absent"}, Log: testr.New(t),
		MinBackoff: base, MaxBackoff: limit,
		Handler: func(context.Context, watch.Event) error { return nil },
		Sleep: func(_ context.Context, d time.Duration) bool {
			delays = append(delays, d)
			if len(delays) == 6 {
				cancel()
				return false
			}
			return true
		},
	}
	require.NoError(t, stream.Run(ctx))

	require.Len(t, delays, 6)
	step, jittered := base, false
	for i, d := range delays {
		require.GreaterOrEqual(t, d, step, "wait %d of %v", i, delays)
		require.LessOrEqual(t, d, step+step/2, "wait %d of %v: at most half again of jitter", i, delays)
		jittered = jittered || d != step
		step = min(2*step, limit)
	}
	require.True(t, jittered, "the waits are jittered: %v", delays)
	require.Greater(t, delays[3], delays[1], "the waits grow: %v", delays)
}
