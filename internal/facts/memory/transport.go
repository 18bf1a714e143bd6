// Package memory is the in-process fact transport
// (--author-attribution-transport=memory): one bounded ring per stream in
// this process's memory. It serves a single replica only, and every fact is
// lost on restart, by design (architecture.md, "Optional attribution").
package memory

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// DefaultMaxLen is how many facts a stream's ring holds when Options.MaxLen
// is zero. A follower is an in-process index whose apply is a map write, so
// it only falls this far behind when it is starved; then it is told how many
// it lost instead of holding the ingress back.
const DefaultMaxLen = 10_000

// Options configure a Transport.
type Options struct {
	// MaxLen bounds each stream's ring; DefaultMaxLen when zero.
	MaxLen int
	// Retention is how long a fact stays deliverable, one fact TTL: a new
	// follower is never given a fact published longer ago, since the index
	// would expire it on read anyway. Zero keeps facts until MaxLen pushes
	// them out.
	Retention time.Duration
	// Clock stamps each fact's publish time; the real clock when nil.
	Clock clock.PassiveClock
}

// Transport carries facts within one process. Publish appends to the
// stream's ring and wakes its followers; each follower reads the ring at
// its own pace from its own position, so a slow follower delays nobody and
// a follower that falls more than MaxLen behind is told through gap how
// many it lost.
//
// Delivered facts carry Stream set to the stream they were published to.
// Their slices (Actor.Groups, Collection) are shared by every follower and
// must not be modified.
type Transport struct {
	opts Options

	mu      sync.Mutex
	streams map[facts.StreamKey]*stream
}

var _ facts.Transport = (*Transport)(nil)

// New returns an empty transport.
func New(opts Options) *Transport {
	if opts.MaxLen <= 0 {
		opts.MaxLen = DefaultMaxLen
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Transport{opts: opts, streams: map[facts.StreamKey]*stream{}}
}

// stream is one ring and the signal its followers sleep on.
type stream struct {
	mu   sync.Mutex
	ring ring
	// published is closed, and replaced, by every Publish: a follower that
	// has read everything waits on the channel it saw.
	published chan struct{}
}

func (t *Transport) stream(key facts.StreamKey) *stream {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.streams[key]
	if !ok {
		s = &stream{ring: ring{max: t.opts.MaxLen}, published: make(chan struct{})}
		t.streams[key] = s
	}
	return s
}

// Publish appends fs to key's ring, stamped with the clock's time, and wakes
// the stream's followers. It takes only the stream's lock, which a follower
// holds just long enough to copy what it has not read, so it never waits on
// a follower's delivery.
func (t *Transport) Publish(ctx context.Context, key facts.StreamKey, fs []facts.Fact) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(fs) == 0 {
		return nil
	}
	s := t.stream(key)
	now := t.opts.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	// A wall clock may step back; publish times stay sorted within a ring
	// so that a follower's since finds its place by binary search.
	if last := s.ring.lastPublished(); now.Before(last) {
		now = last
	}
	if t.opts.Retention > 0 {
		s.ring.dropBefore(now.Add(-t.opts.Retention))
	}
	for _, f := range fs {
		f.Stream = key
		s.ring.push(entry{fact: detach(f), at: now})
	}
	close(s.published)
	s.published = make(chan struct{})
	return nil
}

// detach copies the slices a fact shares with its publisher, so that a
// publisher reusing its buffers cannot change what followers read.
func detach(f facts.Fact) facts.Fact {
	if f.Actor.Groups != nil {
		f.Actor.Groups = append([]string(nil), f.Actor.Groups...)
	}
	if f.Collection != nil {
		c := *f.Collection
		if c.UIDs != nil {
			c.UIDs = append([]string(nil), c.UIDs...)
		}
		f.Collection = &c
	}
	return f
}

// Follow delivers key's retained facts published at or after since and not
// older than Retention, then every fact published later, until ctx ends. It
// sleeps on the stream's publish signal while it has read everything.
func (t *Transport) Follow(ctx context.Context, key facts.StreamKey, since time.Time,
	deliver func([]facts.Fact), gap func(lost int)) error {
	s := t.stream(key)
	s.mu.Lock()
	from := since
	if t.opts.Retention > 0 {
		if oldest := t.opts.Clock.Now().Add(-t.opts.Retention); oldest.After(from) {
			from = oldest
		}
	}
	cursor := s.ring.firstAtOrAfter(from)
	s.mu.Unlock()

	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		switch {
		case cursor < s.ring.first:
			lost := s.ring.first - cursor
			cursor = s.ring.first
			s.mu.Unlock()
			gap(int(lost))
		case cursor == s.ring.next:
			published := s.published
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-published:
			}
		default:
			batch := s.ring.from(cursor)
			cursor = s.ring.next
			s.mu.Unlock()
			deliver(batch)
		}
	}
}
