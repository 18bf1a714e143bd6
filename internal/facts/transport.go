package facts

import (
	"context"
	"time"
)

// Transport carries facts from the audit ingress to the followers of their
// streams. The in-process ring (internal/facts/memory) and the Redis
// Streams transport implement it; internal/facts/factstest is the
// conformance suite both pass.
//
// The two halves never wait on each other: Publish appends and returns, a
// follower reads at its own pace.
type Transport interface {
	// Publish appends facts to stream, in order: one append per type per
	// audit request. It does not wait for any follower.
	Publish(ctx context.Context, stream StreamKey, facts []Fact) error
	// Follow delivers the facts of stream to deliver, in publish order, until
	// ctx ends: first those retained that were published at or after since
	// (a restarted process re-warms its index from them), then every fact
	// published later. Facts lost to retention between two deliveries are
	// reported to gap with how many were lost (0 when unknown). Follow
	// returns ctx's error when ctx ends, or the transport's error when it
	// cannot go on.
	Follow(ctx context.Context, stream StreamKey, since time.Time, deliver func([]Fact), gap func(lost int)) error
}

// Barrier is implemented by a transport that several processes publish to
// (Redis). It lets a reader of this process's index wait for what other
// processes published: the admission observer publishes a review before it
// answers it, and the API server stores the write only after the answer,
// so once a write's watch event is here, every review of that write is in
// its stream, and AwaitDelivered waits until this process's follow has
// delivered it.
type Barrier interface {
	// AwaitDelivered returns once a Follow of stream in this process has
	// delivered every fact published to stream before the call; ctx's
	// error when ctx ends first, the transport's when it cannot tell.
	AwaitDelivered(ctx context.Context, stream StreamKey) error
}
