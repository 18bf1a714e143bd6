package branch

// Event is what the Core is told, one at a time, by its executor. Events
// are plain data; the executor turns each message it receives (and each
// commit it ran) into one.
type Event interface{ isEvent() }

// WriteEvent: an object write of target by author (the zero Author names
// nobody: the committer's).
type WriteEvent struct {
	Target TargetKey
	Author Author
	Write  Write
}

// SyncEvent: a replay's sweep (when Sweep is set) and, with CloseWindow,
// the end of the target's replay.
type SyncEvent struct {
	Target      TargetKey
	Sweep       *Sweep
	CloseWindow bool
}

// AttachEvent: a CommitRequest to bind to a window of its submitter.
type AttachEvent struct{ Request *Request }

// TickEvent: the time a Schedule asked for has come.
type TickEvent struct{}

// TargetEvent: a GitTarget was set, removed (Remove) or suspended
// (Suspend); the last two drop what the core holds for it.
type TargetEvent struct {
	Target          TargetKey
	Remove, Suspend bool
}

// SettleEvent: waiter ID waits for every window of Target opened so far.
type SettleEvent struct {
	ID     uint64
	Target TargetKey
}

// FlushEvent: waiter ID wants Target's open window closed and everything
// pending for it committed, or the attempt's failure.
type FlushEvent struct {
	ID     uint64
	Target TargetKey
}

// CloseEvent closes the open window, whatever its target, and pushes what
// is due.
type CloseEvent struct{}

// StopEvent: the executor is stopping. Without Discard what the core holds
// is pushed once more regardless of budget, parking and backoff; with it,
// it is dropped. StoppedEvent follows once that push ran.
type StopEvent struct{ Discard bool }

// StoppedEvent ends every request and flush still waiting.
type StoppedEvent struct{}

// CommittedEvent: the windows of the last Commit that went through, in
// order from its first (a chain the forge refused goes through one window
// at a time). Chained says they went out as one chain: the push budget is
// spent once for it, as for a single window that made a commit.
type CommittedEvent struct {
	Windows []WindowResult
	Chained bool
}

// WindowResult is what one window became.
type WindowResult struct {
	Seq uint64
	// Committed: a commit was made; false when every change was in Git.
	Committed bool
	Commit    string
	// Refused is how many of its objects the planner would not write.
	Refused int
}

// FailedEvent: the first window of the last Commit (Seq) could not be
// committed. Jitter, in [0, 1), is drawn at random by the executor: the
// share of the retry's jitter this failure adds (Core.failed).
type FailedEvent struct {
	Seq    uint64
	Err    error
	Jitter float64
}

// ConflictEvent: the first window of the last Commit (Seq) met a branch
// another writer moved; nothing of it landed. Jitter, in [0, 1), is drawn
// by the executor: the share of the replay's jitter this conflict adds.
type ConflictEvent struct {
	Seq    uint64
	Err    error
	Jitter float64
}

// ChainRefusedEvent: the forge did not take the last Commit's windows as
// one chain (Seq is its first); nothing of it is on the branch.
type ChainRefusedEvent struct{ Seq uint64 }

func (WriteEvent) isEvent()        {}
func (SyncEvent) isEvent()         {}
func (AttachEvent) isEvent()       {}
func (TickEvent) isEvent()         {}
func (TargetEvent) isEvent()       {}
func (SettleEvent) isEvent()       {}
func (FlushEvent) isEvent()        {}
func (CloseEvent) isEvent()        {}
func (StopEvent) isEvent()         {}
func (StoppedEvent) isEvent()      {}
func (CommittedEvent) isEvent()    {}
func (FailedEvent) isEvent()       {}
func (ConflictEvent) isEvent()     {}
func (ChainRefusedEvent) isEvent() {}
