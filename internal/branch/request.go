package branch

import (
	"context"
	"fmt"
	"time"
)

// Request is a CommitRequest as the worker sees it: close the target's
// open window of the submitter at Deadline (or earlier, when it closes for
// any other reason), with Message as its commit message.
type Request struct {
	// ID names the request in logs (namespace/name).
	ID     string
	Target TargetKey
	// Submitter is the author the admission webhook named. Nil claims no
	// actor: the request then closes only a window that names nobody (the
	// committer's or the unresolved author's).
	Submitter *Author
	// Deadline is receipt + closeDelaySeconds.
	Deadline time.Time
	// Message, when set, is the commit message verbatim.
	Message string
	// Done is told the outcome, once, on the worker's goroutine; it must
	// not block.
	Done func(RequestOutcome)
}

// RequestReason is how a request ended; the CommitRequest's Ready reason
// carries the same word, api/v1alpha3's (this package cannot import the
// API, which brings controller-runtime; internal/metrics' tests pin every
// value to an API reason).
type RequestReason string

const (
	// RequestCommitted: the window was committed and reached the remote.
	RequestCommitted RequestReason = "Committed"
	// RequestNoWindowInGrace: no window of the target was open at the
	// deadline.
	RequestNoWindowInGrace RequestReason = "NoWindowInGrace"
	// RequestWindowMismatch: the target's open window is another author's,
	// or carries another request; it is left alone.
	RequestWindowMismatch RequestReason = "WindowMismatch"
	// RequestAlreadyPresent: the window's changes were all already in Git.
	RequestAlreadyPresent RequestReason = "AlreadyPresent"
	// RequestFinalizeFailed: the commit failed, or the worker or target
	// went away before it was pushed.
	RequestFinalizeFailed RequestReason = "FinalizeFailed"
)

// RequestOutcome is the end of a Request.
type RequestOutcome struct {
	Reason RequestReason
	// Branch, Commit and URL are set when Committed: the commit on the
	// remote, after any conflict replay.
	Branch, Commit, URL string
	// Detail says what happened, in words.
	Detail string
}

type attachMsg struct{ req *Request }

// Attach hands the worker a CommitRequest. It is bound to the target's
// open window at once when it may close it, else to the first such window
// that opens before its deadline; at the deadline it closes that window or
// ends without a commit.
func (w *Worker) Attach(ctx context.Context, r *Request) error {
	return w.send(ctx, attachMsg{req: r})
}

// mayClose is the decision whether r may close win: the same target and
// the same author state. A named submitter closes only its own window; a
// request that claims no actor closes only a window that names nobody.
// Neither ever closes another author's window.
func mayClose(r *Request, win *window) bool {
	if win.target != r.Target {
		return false
	}
	if r.Submitter == nil {
		k := win.author.kind()
		return k == AuthorCommitter || k == AuthorUnresolved
	}
	return win.author.Name == r.Submitter.Name && win.author.Email == r.Submitter.Email
}

func (w *Worker) attach(ctx context.Context, r *Request, now time.Time) {
	if win := w.window; win != nil && win.request == nil && mayClose(r, win) {
		win.bind(r)
	} else {
		w.commitRequests = append(w.commitRequests, r)
	}
	w.requestsDue(ctx, now)
}

// bindWaiting gives a window that just opened the first waiting request
// that may close it.
func (w *Worker) bindWaiting(win *window) {
	for i, r := range w.commitRequests {
		if mayClose(r, win) {
			win.bind(r)
			w.commitRequests = append(w.commitRequests[:i], w.commitRequests[i+1:]...)
			return
		}
	}
}

// requestsDue ends the waiting requests whose deadline passed and closes
// the open window when its request's deadline passed.
func (w *Worker) requestsDue(ctx context.Context, now time.Time) {
	kept := w.commitRequests[:0]
	for _, r := range w.commitRequests {
		if now.Before(r.Deadline) {
			kept = append(kept, r)
			continue
		}
		if win := w.window; win != nil && win.target == r.Target {
			r.end(RequestOutcome{Reason: RequestWindowMismatch, Detail: mismatch(r, win)})
		} else {
			r.end(RequestOutcome{Reason: RequestNoWindowInGrace, Detail: "no commit window of the GitTarget was open by the deadline; nothing to commit"})
		}
	}
	clear(w.commitRequests[len(kept):])
	w.commitRequests = kept
	if win := w.window; win != nil && win.request != nil && !now.Before(win.request.Deadline) {
		w.finalize(ctx)
	}
}

func mismatch(r *Request, win *window) string {
	if win.request != nil && mayClose(r, win) {
		return "the open commit window already carries CommitRequest " + win.request.ID + "; it was left alone"
	}
	return "the open commit window holds changes by " + win.author.Name + ", not by the submitter; it was left alone"
}

// nextDeadline is the earliest deadline of a request the worker holds
// that has not closed its window yet.
func (w *Worker) nextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	consider := func(t time.Time) {
		if !found || t.Before(next) {
			next, found = t, true
		}
	}
	for _, r := range w.commitRequests {
		consider(r.Deadline)
	}
	if w.window != nil && w.window.request != nil {
		consider(w.window.request.Deadline)
	}
	return next, found
}

// pushed ends the request a window carried once the window went through.
func (w *Worker) pushed(win *window, committed bool) {
	r := win.request
	if r == nil {
		return
	}
	win.request = nil
	switch {
	case !committed && win.refused > 0:
		r.end(RequestOutcome{Reason: RequestFinalizeFailed, Detail: fmt.Sprintf(
			"nothing was committed: the operator does not write %d of the window's objects (the GitTarget's ObjectsWritten condition says why)", win.refused)})
		return
	case !committed:
		r.end(RequestOutcome{Reason: RequestAlreadyPresent, Detail: "every change of the commit window was already in Git; nothing to commit"})
		return
	}
	r.end(RequestOutcome{Reason: RequestCommitted, Branch: w.cfg.Key.Branch, Commit: win.commit,
		URL: w.cfg.Forge.CommitURL(win.commit), Detail: "committed and pushed"})
}

// failRequest ends the request of a window whose commit failed, and
// failHeld that of a window a failure holds back (an earlier window of its
// target, or of the branch, failed and is retried at until). The writes
// stay pending and are retried, with the request's message, but the
// request reports the failure now instead of staying in progress for as
// long as the forge keeps failing.
func failRequest(win *window, err error) {
	endFailed(win, err.Error()+"; the changes are kept and retried")
}

func failHeld(win *window, until time.Time) {
	endFailed(win, "an earlier commit of this branch failed and is retried at "+until.UTC().Format(time.RFC3339)+
		"; the changes are kept and committed after it")
}

func endFailed(win *window, detail string) {
	if r := win.request; r != nil {
		win.request = nil
		r.end(RequestOutcome{Reason: RequestFinalizeFailed, Detail: detail})
	}
}

// dropRequests ends every request of target (all when target is nil):
// the worker or the target is going away.
func (w *Worker) dropRequests(target *TargetKey, why string) {
	fail := func(r *Request) { r.end(RequestOutcome{Reason: RequestFinalizeFailed, Detail: why}) }
	kept := w.commitRequests[:0]
	for _, r := range w.commitRequests {
		if target != nil && r.Target != *target {
			kept = append(kept, r)
			continue
		}
		fail(r)
	}
	clear(w.commitRequests[len(kept):])
	w.commitRequests = kept
	windows := w.pending
	if w.window != nil {
		windows = append(windows[:len(windows):len(windows)], w.window)
	}
	for _, win := range windows {
		if win.request != nil && (target == nil || win.target == *target) {
			fail(win.request)
			win.request = nil
		}
	}
}

func (r *Request) end(o RequestOutcome) {
	if r.Done != nil {
		r.Done(o)
	}
}
