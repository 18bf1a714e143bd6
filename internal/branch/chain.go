package branch

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
)

// gathering tells the core to hold pending windows back while events wait
// in the executor's queue and the forge chains commits: the queued events
// close more windows (each change of author closes one), and they all go
// out as one chain once the queue is empty, or once a chain's worth is
// pending. Pushing each window as it closes would keep the backlog one
// window long and pay a push for each. A stopping worker pushes what it
// holds.
func (c *Core) gathering() bool {
	limit := c.ChainLimit
	return !c.stopping && c.Queued > 0 && limit > 1 && len(c.pending) < limit
}

// chainLimit is the most windows one chain carries: what the forge takes
// in one CommitChain (forges.ChainCommitter), 0 when it commits one
// request at a time.
func chainLimit(forge forges.Forge) int {
	if chainer, ok := forge.(forges.ChainCommitter); ok {
		return chainer.ChainLimit()
	}
	return 0
}

// commitChain commits run as one chain of
// commits and one move of the branch, when the forge can
// (forges.ChainCommitter) and at least two windows are ready: interleaved
// authors leave many small windows pending at once, and one push each
// drains them no faster than the push budget. Each window is planned on
// the state the windows before it leave, so authors, order and each
// commit's content are what committing them one at a time would give.
//
// It returns the windows that went through, in order, or none when the
// chain was not tried or did not land; the caller then commits the first
// window on its own, which reads the branch again and answers conflicts
// and failures as it always does.
func (w *Worker) commitChain(ctx context.Context, run []*window) []WindowResult {
	chainer, ok := w.cfg.Forge.(forges.ChainCommitter)
	if !ok || len(run) < 2 || w.prepareFresh(ctx) != nil {
		return nil
	}
	for _, win := range run {
		if !w.state.loaded(win.target) {
			w.state.expect(w.expectedFiles(win.target))
		}
		if err := w.state.ensureLoaded(ctx, win.target); err != nil {
			return nil // committed alone, the first window reports it
		}
	}
	plans, reqs, ok := w.planChain(ctx, run)
	if !ok || len(reqs) < 2 {
		w.state.forget()
		return nil
	}
	start, requestsBefore := w.cfg.Clock.Now(), w.requests()
	results, err := chainer.CommitChain(ctx, reqs)
	if err != nil {
		w.cfg.Log.V(1).Info("chained commit did not land; committing the windows one at a time", "windows", len(run), "error", err.Error())
		w.state.forget()
		return nil
	}
	w.state.chainLanded(plans, results)
	w.state.releaseBlobs()
	perCommit := (w.requests() - requestsBefore) / int64(len(results))
	out := make([]WindowResult, 0, len(run))
	next := 0
	for i, win := range run {
		plan := plans[i]
		w.reportRefusals(win, plan)
		res := WindowResult{Seq: win.seq, Committed: len(plan.files) > 0, Refused: len(plan.refusals)}
		if res.Committed {
			res.Commit = results[next].Commit
			w.recordCommit(win, plan, results[next], start, perCommit)
			next++
		}
		out = append(out, res)
	}
	return out
}

// chainable are the pending windows from `from` on that may go out now,
// up to the first whose target is parked, ChainLimit at most (one when the
// forge does not chain).
func (c *Core) chainable(from int, now time.Time) []*window {
	var run []*window
	for _, win := range c.pending[from:] {
		if until, ok := c.parked[win.target]; ok && now.Before(until) {
			break
		}
		run = append(run, win)
		if len(run) >= c.ChainLimit {
			break
		}
	}
	return run
}

// planChain plans each window of run on the state the ones before it
// leave, moving the state to a stand-in commit after each: plans[i] is
// run[i]'s, and reqs holds the commits of the windows that change
// something. ok is false when a window could not be planned (its target's
// index went with an earlier window's commit, its pending files could not
// be read, or the planner failed):
// committed alone, it reports why.
func (w *Worker) planChain(ctx context.Context, run []*window) (plans []*windowPlan, reqs []forges.CommitRequest, ok bool) {
	for _, win := range run {
		if !w.state.loaded(win.target) {
			return nil, nil, false
		}
		plan, err := w.state.planSettled(ctx, win)
		if err != nil {
			return nil, nil, false
		}
		plans = append(plans, plan)
		if len(plan.files) == 0 {
			continue
		}
		req, err := w.commitRequest(win, plan)
		if err != nil {
			return nil, nil, false
		}
		reqs = append(reqs, req)
		w.state.committed(forges.CommitResult{Commit: standIn(len(reqs))}, plan)
	}
	return plans, reqs, true
}

// standIn names the n-th commit of a chain being planned, before the forge
// has given it an id. It is never a Git object id, so nothing mistakes it
// for one the forge knows.
func standIn(n int) string { return fmt.Sprintf("%s%d", standInPrefix, n) }

const standInPrefix = "chained-commit-"

func isStandIn(commit string) bool { return strings.HasPrefix(commit, standInPrefix) }

// chainLanded replaces the stand-ins of a planned chain with the commits
// the forge made: the head and every index that describes it are at the
// last, their blob ids are the ones the forge answered, and the blobs of
// every commit are cached.
func (s *branchState) chainLanded(plans []*windowPlan, results []forges.CommitResult) {
	last := standIn(len(results))
	s.head = results[len(results)-1].Commit
	s.idLike = s.head
	next := 0
	for _, plan := range plans {
		if len(plan.files) == 0 {
			continue
		}
		if ts, ok := s.targets[plan.target]; ok && ts.at == last {
			ts.advanceBlobs(plan.files, results[next].Blobs, s.head)
		}
		s.cacheWritten(plan, results[next].Blobs)
		next++
	}
	for _, ts := range s.targets {
		if ts.at == last {
			ts.at = s.head
		}
	}
}
