package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// streamID is a Redis stream entry id, milliseconds and sequence, which
// orders the entries of one stream.
type streamID struct{ ms, seq uint64 }

func parseStreamID(id string) (streamID, error) {
	msPart, seqPart, ok := strings.Cut(id, "-")
	if !ok {
		return streamID{}, fmt.Errorf("stream id %q is not <ms>-<seq>", id)
	}
	ms, err := strconv.ParseUint(msPart, 10, 64)
	if err != nil {
		return streamID{}, fmt.Errorf("stream id %q: %w", id, err)
	}
	seq, err := strconv.ParseUint(seqPart, 10, 64)
	if err != nil {
		return streamID{}, fmt.Errorf("stream id %q: %w", id, err)
	}
	return streamID{ms: ms, seq: seq}, nil
}

func (a streamID) before(b streamID) bool {
	return a.ms < b.ms || (a.ms == b.ms && a.seq < b.seq)
}

// deliveredUpTo is the furthest entry of one stream that a follow in this
// process has delivered (or started past). A follow that starts again
// after a failure starts further back and delivers again what the index
// already holds, so the furthest position of any follow is what counts.
type deliveredUpTo struct {
	id streamID
	// moved is closed, and replaced, each time id moves on.
	moved chan struct{}
}

// progress is stream's entry in t.delivered, made on first use. The
// caller holds t.mu.
func (t *Transport) progress(stream facts.StreamKey) *deliveredUpTo {
	if t.delivered == nil {
		t.delivered = map[facts.StreamKey]*deliveredUpTo{}
	}
	p, ok := t.delivered[stream]
	if !ok {
		p = &deliveredUpTo{moved: make(chan struct{})}
		t.delivered[stream] = p
	}
	return p
}

// advance records that a follow of stream has delivered everything up to
// id, once its deliver calls returned.
func (t *Transport) advance(stream facts.StreamKey, id string) {
	at, err := parseStreamID(id)
	if err != nil {
		return // ids come from Redis or startID: cannot happen
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.progress(stream)
	if !p.id.before(at) {
		return
	}
	p.id = at
	close(p.moved)
	p.moved = make(chan struct{})
}

// AwaitDelivered returns once a follow of stream in this process has
// delivered the entry that was the stream's last when it was called: one
// XREVRANGE, then no further round trip. Without a follow of stream it
// waits for one until ctx ends.
func (t *Transport) AwaitDelivered(ctx context.Context, stream facts.StreamKey) error {
	last, err := t.client.XRevRangeN(ctx, t.Key(stream), "+", "-", 1).Result()
	if err != nil {
		return fmt.Errorf("reading the last fact of %s: %w", stream, err)
	}
	if len(last) == 0 {
		return nil // nothing was ever published, or all of it expired
	}
	target, err := parseStreamID(last[0].ID)
	if err != nil {
		return err
	}
	for {
		t.mu.Lock()
		p := t.progress(stream)
		reached, moved := !p.id.before(target), p.moved
		t.mu.Unlock()
		if reached {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
