// Package retry holds the one backoff schedule the operator's loops share
// (watch connects, commit retries, conflict replays) and a sleep on an
// injected clock.
package retry

import (
	"context"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// Jitter is the share of each wait added at random, so loops that failed
// at the same moment (an API server restart, a forge outage) do not retry
// in lockstep. With a factor of two the waits still grow.
const Jitter = 0.5

// Exponential waits initial, doubling up to limit, each wait plus up to
// Jitter of it again.
func Exponential(initial, limit time.Duration) wait.Backoff {
	return wait.Backoff{Duration: initial, Factor: 2, Jitter: Jitter, Steps: math.MaxInt32, Cap: limit}
}

// Sleep waits d on c and reports whether d passed before ctx ended.
func Sleep(ctx context.Context, c clock.Clock, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
