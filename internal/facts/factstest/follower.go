package factstest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// guard bounds how long the suite waits for a sentinel. It is not a timed
// assertion: a transport that works delivers in microseconds; the guard
// only turns a hang into a failure that says what never arrived.
const guard = 30 * time.Second

// Delivery is one call Follow made: a batch of facts, or a gap.
type Delivery struct {
	Facts []facts.Fact
	Gap   bool
	Lost  int
}

// Follower runs one Follow on its own goroutine and records every call it
// makes, for a test to read in order.
type Follower struct {
	calls  chan Delivery
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Follow starts following key from since. The follow ends, and is waited
// for, when the test ends or Stop is called.
func Follow(t *testing.T, tr facts.Transport, key facts.StreamKey, since time.Time) *Follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &Follower{calls: make(chan Delivery, 1024), cancel: cancel, done: make(chan struct{})}
	send := func(d Delivery) {
		select {
		case f.calls <- d:
		case <-ctx.Done():
		}
	}
	go func() {
		defer close(f.done)
		f.err = tr.Follow(ctx, key, since,
			func(fs []facts.Fact) { send(Delivery{Facts: fs}) },
			func(lost int) { send(Delivery{Gap: true, Lost: lost}) })
	}()
	t.Cleanup(func() { f.Stop() })
	return f
}

// Stop cancels the follow and returns what Follow returned.
func (f *Follower) Stop() error {
	f.cancel()
	<-f.done
	return f.err
}

// Until reads the follower's deliveries until a fact with AuditID sentinel
// has been delivered and returns every fact delivered up to and including
// it, in order. A gap fails the test: the suite never overruns a ring.
func (f *Follower) Until(t *testing.T, sentinel string) []facts.Fact {
	t.Helper()
	var got []facts.Fact
	deadline := time.NewTimer(guard)
	defer deadline.Stop()
	for {
		select {
		case d := <-f.calls:
			require.False(t, d.Gap, "a gap of %d facts while waiting for %s", d.Lost, sentinel)
			for i, fact := range d.Facts {
				got = append(got, fact)
				if fact.AuditID == sentinel {
					require.Empty(t, d.Facts[i+1:], "facts delivered after the sentinel %s in its batch", sentinel)
					return got
				}
			}
		case <-f.done:
			if len(f.calls) > 0 {
				continue // what Follow delivered before it returned comes first
			}
			t.Fatalf("Follow returned %v before %s was delivered; got %v", f.err, sentinel, AuditIDs(got))
		case <-deadline.C:
			t.Fatalf("%s was not delivered within %s; got %v", sentinel, guard, AuditIDs(got))
		}
	}
}

// AuditIDs lists the audit ids of fs, in order: what transport tests
// compare.
func AuditIDs(fs []facts.Fact) []string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.AuditID
	}
	return ids
}

// Next returns the follower's next delivery, a batch or a gap.
func (f *Follower) Next(t *testing.T) Delivery {
	t.Helper()
	select {
	case d := <-f.calls:
		return d
	case <-f.done:
		t.Fatalf("Follow returned %v", f.err)
	case <-time.After(guard):
		t.Fatalf("nothing was delivered within %s", guard)
	}
	return Delivery{}
}
