package branch

import (
	"time"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// OutcomeKind says what an Outcome reports. The set is closed: the core's
// Notify actions and the executor's commit results are every way anything
// leaves a worker.
type OutcomeKind string

const (
	// OutcomeRequest: Request ended with Result.
	OutcomeRequest OutcomeKind = "Request"
	// OutcomeCommitted: a commit of Target reached the remote (Commit,
	// Stats, Latencies).
	OutcomeCommitted OutcomeKind = "Committed"
	// OutcomePlanned: a window of Target was planned; it carried Carried,
	// and the planner would not write Refusals safely (the rest of the
	// window is committed).
	OutcomePlanned OutcomeKind = "Planned"
	// OutcomeWentThrough: a window of Target was committed, or was all in
	// Git already. Either way an earlier failure of that target no longer
	// holds; a retry that finds nothing to change makes no commit, so
	// OutcomeCommitted alone would never say so.
	OutcomeWentThrough OutcomeKind = "WentThrough"
	// OutcomeFailed: a window of Target failed with Err and is retried in
	// RetryIn.
	OutcomeFailed OutcomeKind = "Failed"
	// OutcomeReplaying: a window of Target met a branch another writer
	// moved (Err) and is committed again on the new head in RetryIn. The
	// executor logs it; it does not leave the worker.
	OutcomeReplaying OutcomeKind = "Replaying"
	// OutcomeSettled: settle waiter Waiter has nothing of its target
	// held any more; Head is the branch head its writes are in.
	OutcomeSettled OutcomeKind = "Settled"
	// OutcomeFlushed: flush waiter Waiter ends, with Err when it failed.
	OutcomeFlushed OutcomeKind = "Flushed"
	// OutcomeLost: the journal refused a write because another replica
	// holds the branch's claim (Err wraps ErrClaimLost). The worker has
	// committed nothing since and stops; the engine drops it, stops the
	// branch's targets here, and leaves the branch to its new owner.
	OutcomeLost OutcomeKind = "Lost"
	// OutcomePullRequest: in pull-request mode, where Target's pull request
	// stands (PullRequest), after each step the worker took on it. With
	// Rebuild, the head starts afresh from the base, and Target's path must
	// be written again from the cluster: the engine replays its streams.
	OutcomePullRequest OutcomeKind = "PullRequest"
)

// Outcome is one thing that ended; Kind says which fields it sets. The
// core fills the decision (kind, target, request result, waiter); the
// executor adds what only it knows (Worker, where a commit is, the head,
// the waiter's reply) before the outcome leaves on the worker's stream
// (Config.Outcomes).
type Outcome struct {
	Kind    OutcomeKind
	Worker  Key
	Target  TargetKey
	Request *Request
	Result  RequestOutcome
	Waiter  uint64
	Err     error
	RetryIn time.Duration
	// Commit, Stats and Latencies describe an OutcomeCommitted: Latencies
	// holds, per write the commit carried, how long after its watch event
	// it reached the remote.
	Commit    *CommitInfo
	Stats     *CommitStats
	Latencies []time.Duration
	// Carried and Refusals describe an OutcomePlanned.
	Carried  []manifest.ObjectID
	Refusals []manifest.Refusal
	// Head is the branch head an OutcomeSettled's writes are in, "" when
	// the worker does not know it.
	Head string
	// PullRequest and Rebuild describe an OutcomePullRequest.
	PullRequest *PullRequestInfo
	Rebuild     bool
	// reply answers the caller of WhenSettled or Flush (Answer); the core
	// never sets it, so its state stays plain data.
	reply func(Outcome)
}

// Answer tells whoever waits on o its end: the caller of WhenSettled or
// Flush, or the Request (its Outcome). It never blocks. The stream's
// consumer calls it in stream order, so a Flush returns after everything
// its commit emitted before it was delivered.
func (o Outcome) Answer() {
	switch {
	case o.reply != nil:
		o.reply(o)
	case o.Kind == OutcomeRequest && o.Request != nil:
		o.Request.answer(o.Result)
	}
}
