package attribution

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/retry"
)

// errFollowEnded is reported when a Follow returned without an error
// before the follower was stopped.
var errFollowEnded = errors.New("follow ended")

// Follower follows fact streams of a Transport into an Index, each stream
// once, from one TTL ago (a restarted process re-warms its index from the
// stream's retention). A failed Follow is counted and retried after a
// backoff; re-delivered facts are deduplicated by the index.
type Follower struct {
	Transport facts.Transport
	// TransportName labels follower errors (memory, redis).
	TransportName string
	Index         *Index
	Observer      Observer
	Clock         clock.Clock
	// MinBackoff and MaxBackoff bound the wait between failed follows
	// (1 s and 30 s when zero).
	MinBackoff, MaxBackoff time.Duration
	// Sleep waits between failed follows and reports whether d passed
	// before ctx ended; nil waits on Clock, or until Retry.
	Sleep func(ctx context.Context, d time.Duration) bool

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	streams map[facts.StreamKey]struct{}
	stopped bool
	wg      sync.WaitGroup
	// retried is closed, and replaced, by Retry: the follows waiting out a
	// backoff wait on it too.
	retried chan struct{}
}

// Retry has every follow waiting out a backoff after a failure follow again
// now: the transport is back (Redis answers again), and the facts published
// from now on reach the index only through a follow.
func (f *Follower) Retry() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.retried != nil {
		close(f.retried)
	}
	f.retried = make(chan struct{})
}

func (f *Follower) retriedChan() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.retried == nil {
		f.retried = make(chan struct{})
	}
	return f.retried
}

// Ensure starts following stream unless it is already followed or the
// follower was stopped.
func (f *Follower) Ensure(stream facts.StreamKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	if f.streams == nil {
		f.streams = map[facts.StreamKey]struct{}{}
		f.ctx, f.cancel = context.WithCancel(context.Background())
	}
	if _, ok := f.streams[stream]; ok {
		return
	}
	f.streams[stream] = struct{}{}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.follow(f.ctx, stream)
	}()
}

// Stop ends every follow and waits for them to return.
func (f *Follower) Stop() {
	f.mu.Lock()
	f.stopped = true
	if f.cancel != nil {
		f.cancel()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *Follower) follow(ctx context.Context, stream facts.StreamKey) {
	minBackoff, maxBackoff := f.MinBackoff, f.MaxBackoff
	if minBackoff <= 0 {
		minBackoff = time.Second
	}
	if maxBackoff <= 0 {
		maxBackoff = 30 * time.Second
	}
	backoff := retry.Exponential(minBackoff, maxBackoff)
	for {
		var delivered atomic.Bool
		since := f.clock().Now().Add(-f.Index.ttl())
		err := f.Transport.Follow(ctx, stream, since, func(fs []facts.Fact) {
			delivered.Store(true)
			f.Index.Apply(stream, fs)
			if len(fs) > 0 {
				f.observer().FollowerLag(f.TransportName, f.clock().Since(fs[len(fs)-1].Stage))
			}
		}, func(lost int) { f.observer().StreamGap(stream, lost) })
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errFollowEnded
		}
		f.observer().FollowerError(f.TransportName, stream, err)
		if delivered.Load() {
			backoff = retry.Exponential(minBackoff, maxBackoff)
		}
		if !f.sleep(ctx, backoff.Step()) {
			return
		}
	}
}

func (f *Follower) sleep(ctx context.Context, d time.Duration) bool {
	if f.Sleep != nil {
		return f.Sleep(ctx, d)
	}
	retried := f.retriedChan()
	timer := f.clock().NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C():
	case <-retried:
	}
	return true
}

func (f *Follower) clock() clock.Clock {
	if f.Clock != nil {
		return f.Clock
	}
	return clock.RealClock{}
}

func (f *Follower) observer() Observer {
	if f.Observer != nil {
		return f.Observer
	}
	return NopObserver{}
}
