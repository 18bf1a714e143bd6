package branch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// drain is every outcome waiting on the stream, in order.
func drain(stream chan Outcome) []Outcome {
	var out []Outcome
	for {
		select {
		case o := <-stream:
			out = append(out, o)
		default:
			return out
		}
	}
}

func kinds(outcomes []Outcome) []OutcomeKind {
	out := make([]OutcomeKind, len(outcomes))
	for i, o := range outcomes {
		out[i] = o.Kind
	}
	return out
}

// TestAFlushedCommitLeavesOnTheStreamInOrder: what a flushed window
// produces leaves on the one stream in the order it happened, each
// outcome completed by the executor (the worker, where the commit is,
// the waiter's reply), so a consumer that answers in order answers the
// Flush after everything its commit emitted.
func TestAFlushedCommitLeavesOnTheStreamInOrder(t *testing.T) {
	ctx := context.Background()
	w, forge, _, key := handDrivenWorker(t)
	stream := make(chan Outcome, 16)
	w.cfg.Outcomes = stream
	request := &Request{ID: "team/save", Name: "save", Target: key, Deadline: w.cfg.Clock.Now().Add(time.Hour)}
	w.handle(ctx, writeMsg{target: key, write: change("one")})
	w.handle(ctx, attachMsg{req: request})
	done := make(chan error, 1)
	w.handle(ctx, flushMsg{target: key, done: done})

	require.Len(t, forge.commits, 1)
	got := drain(stream)
	require.Equal(t, []OutcomeKind{OutcomePlanned, OutcomeCommitted, OutcomeRequest, OutcomeWentThrough, OutcomeFlushed}, kinds(got))
	for _, o := range got {
		require.Equal(t, w.cfg.Key, o.Worker, "%s names its worker", o.Kind)
		require.Equal(t, key, o.Target, "%s names its target", o.Kind)
	}
	require.Equal(t, 1, got[1].Commit.Objects, "the one object written")
	require.Equal(t, RequestCommitted, got[2].Result.Reason)
	require.Equal(t, "main", got[2].Result.Branch, "the executor says where the commit is")

	_, answered := request.Outcome()
	require.False(t, answered, "the stream's consumer answers, not the worker")
	require.Empty(t, done, "the flush waits for its answer on the stream")
	for _, o := range got {
		o.Answer()
	}
	o, answered := request.Outcome()
	require.True(t, answered)
	require.Equal(t, RequestCommitted, o.Reason)
	require.NoError(t, <-done)
}

// TestWithoutAStreamTheWorkerAnswersItsWaitersItself: a worker with no
// stream (tests of the worker alone) still answers Flush and WhenSettled.
func TestWithoutAStreamTheWorkerAnswersItsWaitersItself(t *testing.T) {
	ctx := context.Background()
	w, _, _, key := handDrivenWorker(t)
	w.handle(ctx, writeMsg{target: key, write: change("one")})
	heads := make(chan string, 1)
	w.handle(ctx, settledMsg{target: key, fn: func(head string) { heads <- head }})
	done := make(chan error, 1)
	w.handle(ctx, flushMsg{target: key, done: done})
	require.NoError(t, <-done)
	require.NotEmpty(t, <-heads, "settled on the commit just made")
}
