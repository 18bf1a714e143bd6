package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// seen records, as words, what each consumer of the fan-out was told.
type seen struct{ calls []string }

func (s *seen) add(format string, args ...any) {
	s.calls = append(s.calls, fmt.Sprintf(format, args...))
}

func (s *seen) committed(c branch.CommitInfo) {
	s.add("status: committed %s to %s", c.Commit, c.Target)
}
func (s *seen) planned(t branch.TargetKey, carried []manifest.ObjectID, refusals []manifest.Refusal) {
	s.add("status: planned %d objects of %s, %d refused", len(carried), t, len(refusals))
}
func (s *seen) failed(t branch.TargetKey, err error) { s.add("status: %s failed: %v", t, err) }
func (s *seen) settled(t branch.TargetKey)           { s.add("status: %s went through", t) }
func (s *seen) pullRequest(t branch.TargetKey, info branch.PullRequestInfo, rebuild bool) {
	s.add("status: %s pull request #%d %s, rebuild %t", t, info.Number, info.State, rebuild)
}

func (s *seen) Commit(w branch.Key, c branch.CommitStats) {
	s.add("metrics: %s commit of %d objects", w, c.Objects)
}
func (s *seen) EventToCommit(w branch.Key, d time.Duration) { s.add("metrics: %s latency %s", w, d) }
func (s *seen) Refused(w branch.Key, reason string)         { s.add("metrics: %s refused %s", w, reason) }

// TestTheFanOutTellsEachOutcomeToItsConsumers: outcome in, what each
// consumer (status, CommitRequest reconciles, waiters, metrics) sees out.
func TestTheFanOutTellsEachOutcomeToItsConsumers(t *testing.T) {
	worker := branch.Key{ProviderNamespace: "team", Provider: "repo", Branch: "main"}
	target := branch.TargetKey{Namespace: "team", Name: "mirror"}
	object := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: "a"}
	request := &branch.Request{ID: "team/save", Name: "save", Target: target}
	cases := []struct {
		name    string
		outcome branch.Outcome
		want    []string
	}{{
		name: "a commit: metrics, then status",
		outcome: branch.Outcome{Kind: branch.OutcomeCommitted, Worker: worker, Target: target,
			Commit: &branch.CommitInfo{Target: target, Commit: "c1"}, Stats: &branch.CommitStats{Objects: 2},
			Latencies: []time.Duration{time.Second, 2 * time.Second}},
		want: []string{"metrics: team/repo@main commit of 2 objects", "metrics: team/repo@main latency 1s",
			"metrics: team/repo@main latency 2s", "status: committed c1 to team/mirror"},
	}, {
		name: "a plan: each refusal counted, then status",
		outcome: branch.Outcome{Kind: branch.OutcomePlanned, Worker: worker, Target: target, Carried: []manifest.ObjectID{object},
			Refusals: []manifest.Refusal{{ID: object, Reason: manifest.RefusalNotEncrypted}}},
		want: []string{"metrics: team/repo@main refused " + string(manifest.RefusalNotEncrypted),
			"status: planned 1 objects of team/mirror, 1 refused"},
	}, {
		name:    "a plan with nothing refused: status only",
		outcome: branch.Outcome{Kind: branch.OutcomePlanned, Worker: worker, Target: target, Carried: []manifest.ObjectID{object}},
		want:    []string{"status: planned 1 objects of team/mirror, 0 refused"},
	}, {
		name:    "a failure: status only",
		outcome: branch.Outcome{Kind: branch.OutcomeFailed, Worker: worker, Target: target, Err: errors.New("refused")},
		want:    []string{"status: team/mirror failed: refused"},
	}, {
		name:    "a window went through: status only",
		outcome: branch.Outcome{Kind: branch.OutcomeWentThrough, Worker: worker, Target: target},
		want:    []string{"status: team/mirror went through"},
	}, {
		name:    "a request ended: its CommitRequest is reconciled",
		outcome: branch.Outcome{Kind: branch.OutcomeRequest, Worker: worker, Target: target, Request: request},
		want:    []string{"requests: team/save"},
	}, {
		name: "a pull request step: status only",
		outcome: branch.Outcome{Kind: branch.OutcomePullRequest, Worker: worker, Target: target,
			PullRequest: &branch.PullRequestInfo{Number: 7, State: forges.PullRequestOpen}, Rebuild: true},
		want: []string{"status: team/mirror pull request #7 open, rebuild true"},
	}, {
		name:    "a settle waiter's answer: nobody else",
		outcome: branch.Outcome{Kind: branch.OutcomeSettled, Worker: worker, Target: target, Waiter: 1},
	}, {
		name:    "a flush's answer: nobody else",
		outcome: branch.Outcome{Kind: branch.OutcomeFlushed, Worker: worker, Target: target, Waiter: 2},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &seen{}
			f := fanOut{status: s, metrics: s, requests: func(k types.NamespacedName) { s.add("requests: %s", k) }}
			f.deliver(tc.outcome)
			require.Equal(t, tc.want, s.calls)

			// Without metrics, the same outcome reaches the other consumers.
			quiet := &seen{}
			fanOut{status: quiet, requests: func(k types.NamespacedName) { quiet.add("requests: %s", k) }}.deliver(tc.outcome)
			var rest []string
			for _, c := range tc.want {
				if c[:len("metrics:")] != "metrics:" {
					rest = append(rest, c)
				}
			}
			require.Equal(t, rest, quiet.calls)
		})
	}
}

// TestARequestsAnswerIsInPlaceBeforeItsReconcileIsQueued: the reconcile
// the fan-out queues reads the request's Outcome, so it is set first.
func TestARequestsAnswerIsInPlaceBeforeItsReconcileIsQueued(t *testing.T) {
	request := &branch.Request{ID: "team/save", Name: "save", Target: branch.TargetKey{Namespace: "team", Name: "mirror"}}
	var atQueue []branch.RequestOutcome
	f := fanOut{status: &seen{}, requests: func(types.NamespacedName) {
		o, ok := request.Outcome()
		require.True(t, ok, "answered before the reconcile is queued")
		atQueue = append(atQueue, o)
	}}
	f.deliver(branch.Outcome{Kind: branch.OutcomeRequest, Request: request, Result: branch.RequestOutcome{Reason: branch.RequestAlreadyPresent}})
	require.Equal(t, []branch.RequestOutcome{{Reason: branch.RequestAlreadyPresent}}, atQueue)
}

// TestTheStreamDeliversWhatWorkersSendWhileTheyStop: outcomes sent while
// the engine stops (a request failed by the shutdown) are delivered
// before Start returns, and the stream closes only after.
func TestTheStreamDeliversWhatWorkersSendWhileTheyStop(t *testing.T) {
	e := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.Start(ctx) }()
	<-e.started
	request := &branch.Request{ID: "team/late", Name: "late", Target: branch.TargetKey{Namespace: "team", Name: "mirror"}}
	e.workerRuns.Add(1) // a worker still stopping
	cancel()
	e.outcomes <- branch.Outcome{Kind: branch.OutcomeRequest, Request: request,
		Result: branch.RequestOutcome{Reason: branch.RequestFinalizeFailed}}
	e.workerRuns.Done()
	require.NoError(t, <-stopped)
	o, ok := request.Outcome()
	require.True(t, ok, "delivered before Start returned")
	require.Equal(t, branch.RequestFinalizeFailed, o.Reason)
}

// BenchmarkTheOutcomeStream is the cost of one commit's outcomes
// (Planned, Committed, WentThrough) through the stream and the fan-out
// into the engine's own status state, for a target that is mirrored: what
// bounds how fast the stream drains.
func BenchmarkTheOutcomeStream(b *testing.B) {
	e := New(Options{})
	target := branch.TargetKey{Namespace: "team", Name: "mirror"}
	e.targets[target] = &targetEntry{refused: refusalSet{}}
	worker := branch.Key{ProviderNamespace: "team", Provider: "repo", Branch: "main"}
	object := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: "a"}
	fanned := make(chan struct{})
	go e.runOutcomes(fanned)
	b.ReportAllocs()
	for b.Loop() {
		e.outcomes <- branch.Outcome{Kind: branch.OutcomePlanned, Worker: worker, Target: target, Carried: []manifest.ObjectID{object}}
		e.outcomes <- branch.Outcome{Kind: branch.OutcomeCommitted, Worker: worker, Target: target,
			Commit: &branch.CommitInfo{Target: target, Commit: "c1"}, Stats: &branch.CommitStats{Objects: 1}}
		e.outcomes <- branch.Outcome{Kind: branch.OutcomeWentThrough, Worker: worker, Target: target}
	}
	close(e.outcomes)
	<-fanned
}
