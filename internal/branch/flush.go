package branch

import (
	"context"
	"errors"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/retry"
)

// push commits pending windows, oldest first, while the push budget allows.
// A conflict re-reads the branch and replays the window's writes on the new
// head. A failure of the forge itself holds the whole branch back for a
// backoff; a failure that belongs to one GitTarget (content it cannot plan)
// parks only that target's windows, so the others keep committing.
func (w *Worker) push(ctx context.Context) {
	if w.gathering() {
		return // the queued events close more windows; they go out together
	}
	w.coalesce()
	now := w.cfg.Clock.Now()
	if now.Before(w.retryAt) {
		for _, win := range w.pending {
			failHeld(win, w.retryAt)
		}
		return
	}
	for i := 0; i < len(w.pending); {
		win := w.pending[i]
		if until, ok := w.parked[win.target]; ok && now.Before(until) {
			failHeld(win, until)
			i++ // keeps this target's windows in order behind the parked one
			continue
		}
		// The budget only spaces a backlog: a single window waiting alone
		// goes out at once, so an editor waiting for each change to land
		// never waits on the budget.
		if wait := w.budget.wait(now); wait > 0 && len(w.pending) > 1 {
			return
		}
		if chained := w.commitChain(ctx, i); len(chained) > 0 {
			w.pending = append(w.pending[:i], w.pending[i+len(chained):]...)
			for _, c := range chained {
				w.wentThrough(c.win, c.committed)
			}
			w.budget.spend(w.cfg.Clock.Now())
			now = w.cfg.Clock.Now()
			continue
		}
		committed, err := w.commitWithReplay(ctx, win)
		if err != nil {
			if !w.failed(win, err) {
				return
			}
			i++
			continue
		}
		w.pending = append(w.pending[:i], w.pending[i+1:]...)
		w.wentThrough(win, committed)
		if committed {
			w.budget.spend(w.cfg.Clock.Now())
		}
		now = w.cfg.Clock.Now()
	}
	w.notifyFlushers(nil, nil)
	w.notifySettled()
}

// wentThrough settles a window that left pending: committed, or with
// nothing to commit.
func (w *Worker) wentThrough(win *window, committed bool) {
	delete(w.parked, win.target)
	w.pushed(win, committed)
	if w.cfg.OnSettled != nil {
		w.cfg.OnSettled(win.target)
	}
	w.retry = w.cfg.retryBackoff()
}

// commitWithReplay commits one window, replaying it on a fresh head after
// each conflict up to MaxAttempts, with a growing, jittered wait before each
// replay: a writer that moved the branch may be moving it again, and two
// writers that collide must not retry in step. It reports whether a commit
// was made (a window whose writes are all already in Git makes none).
func (w *Worker) commitWithReplay(ctx context.Context, win *window) (bool, error) {
	backoff := w.cfg.ConflictBackoff
	for attempt := 1; ; attempt++ {
		committed, err := w.commitOnce(ctx, win)
		if err == nil {
			return committed, nil
		}
		if !errors.Is(err, forges.ErrConflict) {
			return false, err
		}
		w.cfg.Observer.Conflict(w.cfg.Key)
		if attempt >= w.cfg.MaxAttempts {
			return false, err
		}
		delay := backoff.Step()
		w.cfg.Log.V(1).Info("branch moved; replaying the window on the new head", "attempt", attempt, "in", delay.String())
		if !w.sleep(ctx, delay) {
			return false, err
		}
		if rerr := w.state.refresh(ctx); rerr != nil {
			return false, rerr
		}
	}
}

// sleep waits d on the worker's clock (or its Sleep seam); false when ctx
// ended first.
func (w *Worker) sleep(ctx context.Context, d time.Duration) bool {
	if w.cfg.Sleep != nil {
		return w.cfg.Sleep(ctx, d)
	}
	return retry.Sleep(ctx, w.cfg.Clock, d)
}

// commitOnce plans the window against the current head and commits it.
func (w *Worker) commitOnce(ctx context.Context, win *window) (bool, error) {
	if !w.state.loaded(win.target) {
		w.state.expect(w.expectedFiles(win.target))
	}
	if err := w.state.ensureLoaded(ctx, win.target); err != nil {
		return false, err
	}
	plan, err := w.state.plan(win)
	if err != nil {
		return false, err
	}
	w.reportRefusals(win, plan)
	win.refused = len(plan.refusals)
	if len(plan.files) == 0 {
		return false, nil
	}
	req, err := w.commitRequest(win, plan)
	if err != nil {
		return false, err
	}
	start, requestsBefore := w.cfg.Clock.Now(), w.requests()
	res, err := w.cfg.Forge.Commit(ctx, req)
	if err != nil {
		return false, err
	}
	w.state.committed(res, plan)
	w.recordCommit(win, plan, res, start, w.requests()-requestsBefore)
	return true, nil
}

// commitRequest is the commit of a planned window on the branch's head.
func (w *Worker) commitRequest(win *window, plan *windowPlan) (forges.CommitRequest, error) {
	msg, err := w.message(win, plan)
	if err != nil {
		return forges.CommitRequest{}, err
	}
	now := w.cfg.Clock.Now()
	author := w.cfg.Committer
	if win.author.Name != "" {
		author = win.author
	}
	return forges.CommitRequest{
		Branch:       w.cfg.Key.Branch,
		ExpectedHead: w.state.head,
		BaseHead:     w.state.base, // set only while the branch does not exist: the commit creates it there
		Message:      msg,
		Author:       forges.Signature{Name: author.Name, Email: author.Email, When: now},
		Committer:    forges.Signature{Name: w.cfg.Committer.Name, Email: w.cfg.Committer.Email, When: now},
		Changes:      plan.files,
		Signer:       w.cfg.Signer,
	}, nil
}

// recordCommit tells the window, the observer and the log about a commit
// that reached the remote.
func (w *Worker) recordCommit(win *window, plan *windowPlan, res forges.CommitResult, start time.Time, requests int64) {
	win.commit = res.Commit
	w.observeCommit(win, plan, res, start, requests)
	w.cfg.Log.Info("committed", "target", win.target.String(), "commit", res.Commit, "objects", len(plan.changes),
		"author", w.authorOf(win.author).Name)
}

// expectedFiles is the content of the file each pending write of target
// would be on its own at its canonical path, as the planner writes it.
// Sensitive writes are left out: their files hold ciphertext.
func (w *Worker) expectedFiles(target TargetKey) [][]byte {
	var out [][]byte
	windows := w.pending
	if w.window != nil {
		windows = append(windows[:len(windows):len(windows)], w.window)
	}
	for _, win := range windows {
		if win.target != target {
			continue
		}
		for _, wr := range win.writes {
			if wr.YAML != nil && !wr.Sensitive {
				out = append(out, manifest.FileContent(wr.YAML))
			}
		}
	}
	return out
}

func (w *Worker) message(win *window, plan *windowPlan) (string, error) {
	if win.message != "" {
		return win.message, nil
	}
	return w.cfg.Messages.Render(MessageData{
		Target:  win.target.String(),
		Branch:  w.cfg.Key.Branch,
		Author:  win.author.Name,
		Changes: plan.changes,
	}, win.reconcile)
}

func (w *Worker) requests() int64 {
	if w.cfg.Requests == nil {
		return 0
	}
	return w.cfg.Requests()
}

func (w *Worker) observeCommit(win *window, plan *windowPlan, res forges.CommitResult, start time.Time, requests int64) {
	now := w.cfg.Clock.Now()
	w.cfg.Observer.Commit(w.cfg.Key, CommitStats{Author: win.author.kind(), Objects: len(plan.changes),
		SweepDeletes: plan.sweepDeletes, Took: now.Sub(start), Requests: int(requests),
		Target: win.target, Placements: plan.placements})
	for _, wr := range win.writes {
		if !wr.Received.IsZero() {
			w.cfg.Observer.EventToCommit(w.cfg.Key, now.Sub(wr.Received))
		}
	}
	if w.cfg.OnCommit != nil {
		w.cfg.OnCommit(CommitInfo{Target: win.target, Commit: res.Commit, URL: w.cfg.Forge.CommitURL(res.Commit),
			Time: now, Author: win.author, Objects: len(plan.changes)})
	}
}

func (w *Worker) reportRefusals(win *window, plan *windowPlan) {
	for _, r := range plan.refusals {
		w.cfg.Observer.Refused(w.cfg.Key, string(r.Reason))
		w.cfg.Log.Info("not writing an object", "target", win.target.String(), "object", r.ID.String(), "reason", string(r.Reason), "detail", r.Detail)
	}
	if w.cfg.OnPlanned != nil {
		w.cfg.OnPlanned(win.target, win.order, plan.refusals)
	}
}

// failed keeps the window for a later retry, waiting as long as the forge
// asked or with jittered exponential backoff. It reports whether the failure is the
// target's own (the loop may go on with other targets) rather than the
// forge's.
func (w *Worker) failed(win *window, err error) bool {
	delay := w.retry.Step()
	if ra := forges.RetryAfter(err); ra > delay {
		delay = ra
	}
	until := w.cfg.Clock.Now().Add(delay)
	var forgeErr *forges.Error
	targetOnly := !errors.As(err, &forgeErr)
	if targetOnly {
		w.parked[win.target] = until
	} else {
		w.retryAt = until
	}
	// Read the branch again before the retry: whatever failed (a moved head,
	// content a human has since cleaned up) is judged on fresh state.
	w.state.known = false
	failRequest(win, err)
	if !targetOnly {
		// The whole branch waits; the push loop stops here.
		for _, held := range w.pending {
			failHeld(held, until)
		}
	}
	w.cfg.Log.Info("commit failed; keeping the writes for a retry",
		"target", win.target.String(), "retryIn", delay.String(), "error", err.Error())
	if w.cfg.OnError != nil {
		w.cfg.OnError(win.target, wrapTarget(win.target, err))
	}
	if targetOnly {
		w.notifyFlushers(&win.target, wrapTarget(win.target, err))
	} else {
		w.notifyFlushers(nil, wrapTarget(win.target, err))
	}
	return targetOnly
}
