package branch

import (
	"time"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// Observer is told what a worker's loop does, for metrics. What leaves
// the worker (commits, refusals, latencies) is an Outcome on its stream.
type Observer interface {
	QueueDepth(worker Key, depth int)
	// Conflict: the branch moved under a commit; it is replayed.
	Conflict(worker Key)
	// OutcomeWait: the outcome stream was full, and the worker waited for
	// its consumer.
	OutcomeWait(worker Key)
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

func (NopObserver) QueueDepth(Key, int) {}
func (NopObserver) Conflict(Key)        {}
func (NopObserver) OutcomeWait(Key)     {}
