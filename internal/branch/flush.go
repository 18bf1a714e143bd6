package branch

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// commit runs a Commit action: the windows as one chain when there are
// several, else the only one. What happened comes back as the event the
// core is told next; the core decides what follows (a replay after a
// conflict, the first window alone after a refused chain, a retry after a
// failure).
func (w *Worker) commit(ctx context.Context, a Commit) Event {
	if len(a.Windows) > 1 {
		if results := w.commitChain(ctx, a.Windows); len(results) > 0 {
			w.pullRequestStep(ctx) // a chain lands only with commits
			return CommittedEvent{Windows: results, Chained: true}
		}
		return ChainRefusedEvent{Seq: a.Windows[0].seq}
	}
	win := a.Windows[0]
	res, err := w.commitOnce(ctx, win)
	if err == nil {
		if res.Committed {
			w.pullRequestStep(ctx)
		}
		return CommittedEvent{Windows: []WindowResult{res}}
	}
	// Read the branch again before the next try: whatever failed (a moved
	// head, content a human has since cleaned up) is judged on fresh
	// state.
	w.state.forget()
	if errors.Is(err, forges.ErrConflict) {
		w.cfg.Observer.Conflict(w.cfg.Key)
		return ConflictEvent{Seq: win.seq, Err: err, Jitter: rand.Float64()}
	}
	return FailedEvent{Seq: win.seq, Err: err, Jitter: rand.Float64()}
}

// commitOnce plans the window against the current head and commits it.
func (w *Worker) commitOnce(ctx context.Context, win *window) (WindowResult, error) {
	out := WindowResult{Seq: win.seq}
	if err := w.prepareFresh(ctx); err != nil {
		return out, err
	}
	if !w.state.loaded(win.target) {
		w.state.expect(w.expectedFiles(win.target))
	}
	if err := w.state.ensureLoaded(ctx, win.target); err != nil {
		return out, err
	}
	plan, err := w.state.planSettled(ctx, win)
	if err != nil {
		return out, err
	}
	w.reportRefusals(win, plan)
	out.Refused = len(plan.refusals)
	if len(plan.files) == 0 {
		return out, nil
	}
	req, err := w.commitRequest(win, plan)
	if err != nil {
		return out, err
	}
	start, requestsBefore := w.cfg.Clock.Now(), w.requests()
	res, err := w.cfg.Forge.Commit(ctx, req)
	if err != nil {
		return out, err
	}
	w.state.committed(res, plan)
	w.state.releaseBlobs()
	w.recordCommit(win, plan, res, start, w.requests()-requestsBefore)
	out.Committed, out.Commit = true, res.Commit
	return out, nil
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
		BaseHead:     w.state.base,  // set only while the branch does not exist: the commit creates it there
		MergeParent:  w.state.fresh, // pull-request mode starting afresh from the base
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
	w.observeCommit(win, plan, res, start, requests)
	w.pullCommitted(win, plan)
	w.cfg.Log.Info("committed", "target", win.target.String(), "commit", res.Commit, "objects", len(plan.changes),
		"author", w.core.authorOf(win.author).Name)
}

// expectedFiles is the content of the file each pending write of target
// would be on its own at its canonical path, as the planner writes it.
// Sensitive writes are left out: their files hold ciphertext.
func (w *Worker) expectedFiles(target TargetKey) []rendering {
	var out []rendering
	for _, win := range w.core.held() {
		if win.target != target {
			continue
		}
		for _, wr := range win.writes {
			if wr.YAML != nil && !wr.Sensitive {
				out = append(out, rendering{Content: manifest.FileContent(wr.YAML), ID: wr.ID})
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
	var latencies []time.Duration
	for _, wr := range win.writes {
		if !wr.Received.IsZero() {
			latencies = append(latencies, now.Sub(wr.Received))
		}
	}
	w.emit(Outcome{Kind: OutcomeCommitted, Target: win.target,
		Commit: &CommitInfo{Target: win.target, Commit: res.Commit, URL: w.cfg.Forge.CommitURL(res.Commit),
			Time: now, Author: win.author, Objects: len(plan.changes)},
		Stats: &CommitStats{Author: win.author.kind(), Objects: len(plan.changes),
			SweepDeletes: plan.sweepDeletes, Took: now.Sub(start), Requests: int(requests),
			Target: win.target, Placements: plan.placements},
		Latencies: latencies})
}

func (w *Worker) reportRefusals(win *window, plan *windowPlan) {
	for _, r := range plan.refusals {
		w.cfg.Log.Info("not writing an object", "target", win.target.String(), "object", r.ID.String(), "reason", string(r.Reason), "detail", r.Detail)
	}
	w.emit(Outcome{Kind: OutcomePlanned, Target: win.target, Carried: win.carried(), Refusals: plan.refusals})
}
