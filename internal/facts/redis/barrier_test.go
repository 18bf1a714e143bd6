package redis

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/facts/factstest"
)

// AwaitDelivered waits for what was published before it, and for this
// process's follow to have handed it on: not a moment earlier.
func TestAwaitDeliveredReturnsOnceTheFollowHandedOnTheLastFact(t *testing.T) {
	tr := newTransport(t, Options{})
	k := uniqueKey(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	require.NoError(t, tr.AwaitDelivered(ctx, k), "an empty stream holds nothing to wait for")

	require.NoError(t, tr.Publish(ctx, k, factstest.Numbered("review", 0, 3)))
	barrier := make(chan error, 1)
	go func() { barrier <- tr.AwaitDelivered(ctx, k) }()

	var delivered atomic.Int32
	releaseDeliver := make(chan struct{})
	returnedEarly := make(chan bool, 1)
	follow := make(chan error, 1)
	go func() {
		follow <- tr.Follow(ctx, k, time.Time{}, func(fs []facts.Fact) {
			<-releaseDeliver
			select {
			case <-barrier:
				returnedEarly <- true
			default:
				returnedEarly <- false
			}
			delivered.Add(int32(len(fs)))
		}, func(int) {})
	}()
	close(releaseDeliver)
	require.False(t, <-returnedEarly, "the barrier returned before the follow handed the facts on")
	require.NoError(t, <-barrier)
	require.EqualValues(t, 3, delivered.Load())

	// Later facts are waited for in turn; the follow is still live.
	require.NoError(t, tr.Publish(ctx, k, factstest.Numbered("later", 0, 1)))
	go func() { barrier <- tr.AwaitDelivered(ctx, k) }()
	require.False(t, <-returnedEarly, "the barrier returned before the follow handed the later fact on")
	require.NoError(t, <-barrier)
	require.EqualValues(t, 4, delivered.Load())

	cancel()
	require.ErrorIs(t, <-follow, context.Canceled)
}

// A follow that starts past the stream's facts (they are older than its
// since) has nothing of them to deliver: the barrier does not wait for
// them.
func TestAwaitDeliveredCountsWhatAFollowStartsPast(t *testing.T) {
	tr := newTransport(t, Options{})
	k := uniqueKey(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, tr.Publish(ctx, k, factstest.Numbered("old", 0, 2)))
	follow := make(chan error, 1)
	go func() {
		follow <- tr.Follow(ctx, k, time.Now().Add(time.Hour), func([]facts.Fact) {
			t.Error("a fact older than since was delivered")
		}, func(int) {})
	}()
	require.NoError(t, tr.AwaitDelivered(ctx, k))
	cancel()
	require.ErrorIs(t, <-follow, context.Canceled)
}

// Without a follow of the stream, the barrier waits until its ctx ends.
func TestAwaitDeliveredWithoutAFollowEndsWithItsContext(t *testing.T) {
	tr := newTransport(t, Options{})
	k := uniqueKey(t)
	require.NoError(t, tr.Publish(context.Background(), k, factstest.Numbered("review", 0, 1)))
	ctx, cancel := context.WithCancel(context.Background())
	barrier := make(chan error, 1)
	go func() { barrier <- tr.AwaitDelivered(ctx, k) }()
	cancel()
	require.ErrorIs(t, <-barrier, context.Canceled)
}
