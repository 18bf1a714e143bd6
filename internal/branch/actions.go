package branch

import "time"

// Action is what the Core asks its executor to do, as plain data.
type Action interface{ isAction() }

// Commit asks for Windows to be committed, oldest first, as one chain when
// there are several (the core asks for several only when the forge chains,
// Core.ChainLimit). Its result comes back as a CommittedEvent, a
// ConflictEvent, a ChainRefusedEvent or a FailedEvent; until the core has
// done with it (a conflict is replayed, a refused chain's first window
// goes alone) it asks for no other commit.
type Commit struct{ Windows []*window }

// Notify tells the outside how something ended.
type Notify struct{ Outcome Outcome }

// Schedule asks for a TickEvent at At; a later Schedule replaces it.
type Schedule struct{ At time.Time }

func (Commit) isAction()   {}
func (Notify) isAction()   {}
func (Schedule) isAction() {}

// OutcomeKind says what an Outcome reports.
type OutcomeKind string

const (
	// OutcomeRequest: Request ended with Result.
	OutcomeRequest OutcomeKind = "Request"
	// OutcomeWentThrough: a window of Target was committed, or was all in
	// Git already (Config.OnSettled).
	OutcomeWentThrough OutcomeKind = "WentThrough"
	// OutcomeFailed: a window of Target failed with Err and is retried in
	// RetryIn (Config.OnError).
	OutcomeFailed OutcomeKind = "Failed"
	// OutcomeReplaying: a window of Target met a branch another writer
	// moved (Err) and is committed again on the new head in RetryIn.
	OutcomeReplaying OutcomeKind = "Replaying"
	// OutcomeSettled: settle waiter Waiter has nothing of its target
	// held any more.
	OutcomeSettled OutcomeKind = "Settled"
	// OutcomeFlushed: flush waiter Waiter ends, with Err when it failed.
	OutcomeFlushed OutcomeKind = "Flushed"
)

// Outcome is one thing that ended; Kind says which fields it sets.
type Outcome struct {
	Kind    OutcomeKind
	Target  TargetKey
	Request *Request
	Result  RequestOutcome
	Waiter  uint64
	Err     error
	RetryIn time.Duration
}
