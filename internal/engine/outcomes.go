package engine

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// outcomeStreamSize bounds the outcomes waiting for the fan-out. The
// fan-out only updates state in memory and queues reconciles that merge
// per object, so it drains far faster than workers commit; a worker that
// finds the stream full waits, counted (outcome_stream_waits_total), and
// nothing is dropped.
const outcomeStreamSize = 1024

// OutcomeMetrics is told by the fan-out what the workers' commits and
// plans did.
type OutcomeMetrics interface {
	Commit(worker branch.Key, stats branch.CommitStats)
	EventToCommit(worker branch.Key, latency time.Duration)
	Refused(worker branch.Key, reason string)
}

// targetState is the fan-out's status consumer: the runtime state a
// GitTarget's status is read from (Engine.Status); each change queues the
// target's reconcile.
type targetState interface {
	committed(branch.CommitInfo)
	planned(target branch.TargetKey, carried []manifest.ObjectID, refusals []manifest.Refusal)
	failed(target branch.TargetKey, err error)
	settled(target branch.TargetKey)
	pullRequest(target branch.TargetKey, info branch.PullRequestInfo, rebuild bool)
}

// fanOut hands each outcome of the engine's one stream to the consumers
// of its kind: the waiter it answers (a CommitRequest, a cursor store's
// WhenSettled, a Flush), the targets' status, the CommitRequest
// reconciles, and metrics.
type fanOut struct {
	status targetState
	// requests queues the reconcile of an answered CommitRequest; the
	// queue merges per request, so it never blocks.
	requests func(types.NamespacedName)
	// metrics is nil when nothing is measured.
	metrics OutcomeMetrics
	// lost stops a branch whose journal claim another replica holds; it
	// must not block (the stopping worker may still be sending here).
	lost func(branch.Key)
}

// deliver runs on the stream's one consumer goroutine, so outcomes reach
// every consumer in the order their worker sent them: a Flush answered
// here returns after the status and metrics of its commit were updated.
func (f fanOut) deliver(o branch.Outcome) {
	// The waiter first: a request's outcome must be in place before its
	// reconcile is queued.
	o.Answer()
	switch o.Kind {
	case branch.OutcomeCommitted:
		if f.metrics != nil {
			f.metrics.Commit(o.Worker, *o.Stats)
			for _, latency := range o.Latencies {
				f.metrics.EventToCommit(o.Worker, latency)
			}
		}
		f.status.committed(*o.Commit)
	case branch.OutcomePlanned:
		if f.metrics != nil {
			for _, r := range o.Refusals {
				f.metrics.Refused(o.Worker, string(r.Reason))
			}
		}
		f.status.planned(o.Target, o.Carried, o.Refusals)
	case branch.OutcomeFailed:
		f.status.failed(o.Target, o.Err)
	case branch.OutcomeWentThrough:
		f.status.settled(o.Target)
	case branch.OutcomeRequest:
		f.requests(types.NamespacedName{Namespace: o.Request.Target.Namespace, Name: o.Request.Name})
	case branch.OutcomePullRequest:
		if o.PullRequest != nil {
			f.status.pullRequest(o.Target, *o.PullRequest, o.Rebuild)
		}
	case branch.OutcomeLost:
		if f.lost != nil {
			f.lost(o.Worker)
		}
	case branch.OutcomeSettled, branch.OutcomeFlushed:
		// Answered above: nothing else waits on them.
	}
}

// runOutcomes is the stream's one consumer; it returns once the stream is
// closed, after every worker stopped.
func (e *Engine) runOutcomes(done chan<- struct{}) {
	defer close(done)
	f := fanOut{status: e, requests: e.answered.notify, lost: e.lost}
	if e.opts.Metrics != nil {
		f.metrics = e.opts.Metrics
	}
	for o := range e.outcomes {
		f.deliver(o)
	}
}

// Answered is the channel the CommitRequest reconciler watches
// (source.Channel) for requests a worker answered; the answer is the
// request's Outcome.
func (e *Engine) Answered() <-chan event.GenericEvent { return e.answered.out }

// targetObject is the object a status-refresh event names.
func targetObject(t branch.TargetKey) client.Object {
	return &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name}}
}

// requestObject is the object an answer event names.
func requestObject(k types.NamespacedName) client.Object {
	return &v1alpha3.CommitRequest{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
}
