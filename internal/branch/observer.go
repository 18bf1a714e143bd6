package branch

import (
	"time"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// Observer is told what workers do, for metrics.
type Observer interface {
	QueueDepth(worker Key, depth int)
	// Commit: a commit reached the remote.
	Commit(worker Key, stats CommitStats)
	// EventToCommit: one write reached the remote latency after its watch
	// event arrived.
	EventToCommit(worker Key, latency time.Duration)
	// Conflict: the branch moved under a commit; it is replayed.
	Conflict(worker Key)
	// Refused: an object was not written, for reason.
	Refused(worker Key, reason string)
}

// CommitStats describes one commit for metrics.
type CommitStats struct {
	Author AuthorKind
	// Objects created, updated or deleted.
	Objects int
	// SweepDeletes are deletes a replay's mark-and-sweep found.
	SweepDeletes int
	// Took is how long the forge took.
	Took time.Duration
	// Requests the forge made for the commit (0 when not counted).
	Requests int
	// Target is the GitTarget the commit wrote.
	Target TargetKey
	// Placements holds, per object the commit created, the placement
	// ladder step that chose its path.
	Placements []manifest.PlacementSource
}

// NopObserver observes nothing.
type NopObserver struct{}

func (NopObserver) QueueDepth(Key, int)              {}
func (NopObserver) Commit(Key, CommitStats)          {}
func (NopObserver) EventToCommit(Key, time.Duration) {}
func (NopObserver) Conflict(Key)                     {}
func (NopObserver) Refused(Key, string)              {}
