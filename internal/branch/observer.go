package branch

import "time"

// Observer is told what workers do, for metrics.
type Observer interface {
	QueueDepth(worker Key, depth int)
	// Commit: a commit of objects reached the remote, taking took.
	Commit(worker Key, author AuthorKind, objects int, took time.Duration)
	// EventToCommit: one write reached the remote latency after its watch
	// event arrived.
	EventToCommit(worker Key, latency time.Duration)
	// Conflict: the branch moved under a commit; it is replayed.
	Conflict(worker Key)
	// Refused: an object was not written, for reason.
	Refused(worker Key, reason string)
}

// NopObserver observes nothing.
type NopObserver struct{}

func (NopObserver) QueueDepth(Key, int)                        {}
func (NopObserver) Commit(Key, AuthorKind, int, time.Duration) {}
func (NopObserver) EventToCommit(Key, time.Duration)           {}
func (NopObserver) Conflict(Key)                               {}
func (NopObserver) Refused(Key, string)                        {}
