// Package fallback keeps attribution working in one process while the
// shared fact transport (Redis) is away: a publish the shared transport
// refuses is handed to this process's own index at once, so the changes
// this process watches keep their authors, and is held to be published
// when the shared transport takes publishes again, for as long as the facts
// can still be joined (one fact TTL). Other replicas and a later restart
// learn of the held facts only then.
package fallback

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/retry"
)

// Defaults for the zero fields of Options.
const (
	// DefaultMaxHeld bounds the facts held for publishing: the index's own
	// per-type cap, so an outage of hours holds no more than one busy type
	// would fill the index with.
	DefaultMaxHeld    = 50_000
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 10 * time.Second
	// publishTimeout bounds one publish of held facts, so a Redis that
	// stalls instead of refusing does not stall the retries.
	publishTimeout = 10 * time.Second
)

// HeldOutcome says what became of held facts (the outcome label of
// attribution_held_facts_total).
type HeldOutcome string

const (
	// HeldPublished: published to the shared transport once it was back.
	HeldPublished HeldOutcome = "published"
	// HeldExpired: older than one fact TTL when it could have been
	// published; nobody could join it any more.
	HeldExpired HeldOutcome = "expired"
	// HeldOverflow: pushed out by newer facts past MaxHeld.
	HeldOverflow HeldOutcome = "overflow"
)

// HeldOutcomes are every HeldOutcome, for zero series.
var HeldOutcomes = []HeldOutcome{HeldPublished, HeldExpired, HeldOverflow}

// Observer is told how many facts are held and what became of them;
// internal/metrics implements it.
type Observer interface {
	// HeldFacts: n facts are now held for publishing.
	HeldFacts(n int)
	// HeldDone: n held facts ended as outcome.
	HeldDone(outcome HeldOutcome, n int)
}

// Options configure a Transport.
type Options struct {
	// Shared is the transport every replica follows (Redis). Required.
	Shared facts.Transport
	// Local files facts into this process's index (attribution.Index's
	// Apply). Required.
	Local func(facts.StreamKey, []facts.Fact)
	// Retention is one fact TTL: a held fact staged longer ago is dropped
	// instead of published. Zero keeps held facts until MaxHeld.
	Retention time.Duration
	// MaxHeld bounds the facts held; DefaultMaxHeld when zero.
	MaxHeld int
	// MinBackoff and MaxBackoff space the attempts to publish held facts;
	// the defaults when zero.
	MinBackoff, MaxBackoff time.Duration
	// Failed is told of every publish the shared transport refused (the
	// Redis monitor checks at once instead of at its next tick); nil is
	// told nothing.
	Failed func(error)
	// Observer counts the held facts; nil counts nothing.
	Observer Observer
	// Log gets one line when the held facts of an outage have been
	// published (or dropped).
	Log   logr.Logger
	Clock clock.Clock
}

// Transport is a facts.Transport over Options.Shared that never refuses a
// publish: see the package comment. Follow is the shared transport's.
type Transport struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}

	mu        sync.Mutex
	held      []*heldBatch // in publish order
	heldFacts int
	retrying  bool
	closed    bool
	tally     map[HeldOutcome]int // of the current outage, for its log line
	wg        sync.WaitGroup
}

// heldBatch is one refused publish.
type heldBatch struct {
	stream facts.StreamKey
	facts  []facts.Fact
	at     time.Time // when it was held: the age of a fact without a stage time
}

var (
	_ facts.Transport = (*Transport)(nil)
	_ facts.Barrier   = (*Transport)(nil)
)

// errHolding is AwaitDelivered's answer while publishes are held: what
// other processes published meanwhile is not in the shared transport.
var errHolding = errors.New("the shared fact transport is away; facts are held")

// New checks opts and fills in their defaults. Close stops the retries.
func New(opts Options) (*Transport, error) {
	if opts.Shared == nil || opts.Local == nil {
		return nil, errors.New("the fallback fact transport needs a shared transport and a local index")
	}
	if opts.MaxHeld <= 0 {
		opts.MaxHeld = DefaultMaxHeld
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Failed == nil {
		opts.Failed = func(error) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{opts: opts, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1),
		tally: map[HeldOutcome]int{}}, nil
}

// Publish publishes fs through the shared transport. While facts are held
// (the shared transport refused one before), or when it refuses this one,
// fs goes to the local index at once and is held behind the others; the
// publish then succeeds, so the ingress answers 200 and the API server does
// not retry a batch this process has taken. Only a publish whose ctx ended
// fails (the request is gone; the API server retries it).
func (t *Transport) Publish(ctx context.Context, stream facts.StreamKey, fs []facts.Fact) error {
	if len(fs) == 0 {
		return nil
	}
	if !t.holding() {
		err := t.opts.Shared.Publish(ctx, stream, fs)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		t.opts.Failed(err)
	}
	t.opts.Local(stream, fs)
	t.hold(stream, fs)
	return nil
}

// Follow follows the shared transport.
func (t *Transport) Follow(ctx context.Context, stream facts.StreamKey, since time.Time,
	deliver func([]facts.Fact), gap func(lost int)) error {
	return t.opts.Shared.Follow(ctx, stream, since, deliver, gap)
}

// AwaitDelivered is the shared transport's (facts.Barrier), which must
// have one; it fails at once while facts are held.
func (t *Transport) AwaitDelivered(ctx context.Context, stream facts.StreamKey) error {
	barrier, ok := t.opts.Shared.(facts.Barrier)
	switch {
	case !ok:
		return errors.New("the shared fact transport cannot say what it delivered")
	case t.holding():
		return errHolding
	}
	return barrier.AwaitDelivered(ctx, stream)
}

// Retry makes the next attempt to publish held facts now (the Redis
// monitor calls it when Redis answers again).
func (t *Transport) Retry() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Close stops the retries (facts still held are lost with the process) and
// closes the shared transport when it can be closed.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	if closer, ok := t.opts.Shared.(interface{ Close() error }); ok {
		return closer.Close()
	}
	return nil
}

// Held is how many facts are held for publishing.
func (t *Transport) Held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.heldFacts
}

func (t *Transport) holding() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held) > 0
}

// hold queues fs behind the facts already held, drops the oldest past
// MaxHeld, and starts the retries unless they run.
func (t *Transport) hold(stream facts.StreamKey, fs []facts.Fact) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.held = append(t.held, &heldBatch{stream: stream, facts: fs, at: t.opts.Clock.Now()})
	t.heldFacts += len(fs)
	for t.heldFacts > t.opts.MaxHeld && len(t.held) > 1 {
		t.dropFront(HeldOverflow, len(t.held[0].facts))
	}
	t.opts.Observer.HeldFacts(t.heldFacts)
	if !t.retrying {
		t.retrying = true
		t.wg.Add(1)
		go t.retryUntilPublished()
	}
}

// dropFront forgets the oldest held batch, n of its facts ending as
// outcome (the others were published). Under mu.
func (t *Transport) dropFront(outcome HeldOutcome, n int) {
	t.heldFacts -= len(t.held[0].facts)
	t.held[0] = nil
	t.held = t.held[1:]
	if n > 0 {
		t.tally[outcome] += n
		t.opts.Observer.HeldDone(outcome, n)
	}
}

// retryUntilPublished publishes the held facts, oldest first, after a
// backoff (or a Retry), until none is held or Close.
func (t *Transport) retryUntilPublished() {
	defer t.wg.Done()
	backoff := retry.Exponential(t.opts.MinBackoff, t.opts.MaxBackoff)
	for {
		timer := t.opts.Clock.NewTimer(backoff.Step())
		select {
		case <-t.ctx.Done():
			timer.Stop()
			return
		case <-t.wake:
			timer.Stop()
		case <-timer.C():
		}
		if t.publishHeld() {
			return
		}
	}
}

// publishHeld publishes held batches in order until one is refused
// (false) or none is left (true, the retries end).
func (t *Transport) publishHeld() bool {
	for {
		batch, fresh, done := t.nextHeld()
		if done {
			return true
		}
		if batch == nil {
			continue // the front batch had expired entirely
		}
		ctx, cancel := context.WithTimeout(t.ctx, publishTimeout)
		err := t.opts.Shared.Publish(ctx, batch.stream, fresh)
		cancel()
		if err != nil {
			return false
		}
		t.mu.Lock()
		if len(t.held) > 0 && t.held[0] == batch { // not pushed out meanwhile
			t.dropFront(HeldPublished, len(fresh))
			t.tally[HeldExpired] += len(batch.facts) - len(fresh)
			if expired := len(batch.facts) - len(fresh); expired > 0 {
				t.opts.Observer.HeldDone(HeldExpired, expired)
			}
		}
		t.opts.Observer.HeldFacts(t.heldFacts)
		t.mu.Unlock()
	}
}

// nextHeld is the oldest held batch and those of its facts still worth
// publishing; a batch with none is dropped (nil batch). done: nothing is
// held, the retries end and the outage's tally is logged.
func (t *Transport) nextHeld() (batch *heldBatch, fresh []facts.Fact, done bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.held) == 0 || t.closed {
		t.retrying = false
		t.logTally()
		return nil, nil, true
	}
	batch = t.held[0]
	fresh = t.fresh(batch)
	if len(fresh) == 0 {
		t.dropFront(HeldExpired, len(batch.facts))
		t.opts.Observer.HeldFacts(t.heldFacts)
		return nil, nil, false
	}
	return batch, fresh, false
}

// fresh are the facts of b staged within one Retention.
func (t *Transport) fresh(b *heldBatch) []facts.Fact {
	if t.opts.Retention <= 0 {
		return b.facts
	}
	oldest := t.opts.Clock.Now().Add(-t.opts.Retention)
	var fresh []facts.Fact
	for _, f := range b.facts {
		staged := f.Stage
		if staged.IsZero() {
			staged = b.at
		}
		if !staged.Before(oldest) {
			fresh = append(fresh, f)
		}
	}
	return fresh
}

// logTally says, once per outage, what became of its held facts. Under mu.
func (t *Transport) logTally() {
	if len(t.tally) == 0 || t.closed {
		return
	}
	t.opts.Log.Info("attribution facts held while the shared fact transport was away are published",
		"published", t.tally[HeldPublished], "expired", t.tally[HeldExpired], "overflow", t.tally[HeldOverflow])
	t.tally = map[HeldOutcome]int{}
}

type nopObserver struct{}

func (nopObserver) HeldFacts(int)             {}
func (nopObserver) HeldDone(HeldOutcome, int) {}
