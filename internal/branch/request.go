package branch

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Request is a CommitRequest as the worker sees it: close the target's
// open window of the submitter at Deadline (or earlier, when it closes for
// any other reason), with Message as its commit message.
type Request struct {
	// ID names the request in logs (namespace/name).
	ID string
	// Name is the CommitRequest's name; it lives in its target's
	// namespace.
	Name   string
	Target TargetKey
	// Submitter is the author the admission webhook named. Nil claims no
	// actor: the request then closes only a window that names nobody (the
	// committer's or the unresolved author's).
	Submitter *Author
	// Deadline is receipt + closeDelaySeconds.
	Deadline time.Time
	// Message, when set, is the commit message verbatim.
	Message string

	// mu guards outcome, which the stream's consumer sets (Outcome.Answer)
	// and the CommitRequest controller reads; neither is state the core
	// keeps.
	mu      sync.Mutex
	outcome *RequestOutcome
}

// Outcome is how the request ended; false while it has not.
func (r *Request) Outcome() (RequestOutcome, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outcome == nil {
		return RequestOutcome{}, false
	}
	return *r.outcome, true
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

func (c *Core) attach(r *Request, now time.Time) {
	if win := c.window; win != nil && win.request == nil && mayClose(r, win) {
		win.bind(r)
	} else {
		c.commitRequests = append(c.commitRequests, r)
	}
	c.requestsDue(now)
}

// bindWaiting gives a window that just opened the first waiting request
// that may close it.
func (c *Core) bindWaiting(win *window) {
	for i, r := range c.commitRequests {
		if mayClose(r, win) {
			win.bind(r)
			c.commitRequests = append(c.commitRequests[:i], c.commitRequests[i+1:]...)
			return
		}
	}
}

// requestsDue ends the waiting requests whose deadline passed and closes
// the open window when its request's deadline passed.
func (c *Core) requestsDue(now time.Time) {
	kept := c.commitRequests[:0]
	for _, r := range c.commitRequests {
		if now.Before(r.Deadline) {
			kept = append(kept, r)
			continue
		}
		if win := c.window; win != nil && win.target == r.Target {
			c.end(r, RequestOutcome{Reason: RequestWindowMismatch, Detail: mismatch(r, win)})
		} else {
			c.end(r, RequestOutcome{Reason: RequestNoWindowInGrace, Detail: "no commit window of the GitTarget was open by the deadline; nothing to commit"})
		}
	}
	clear(c.commitRequests[len(kept):])
	c.commitRequests = kept
	if win := c.window; win != nil && win.request != nil && !now.Before(win.request.Deadline) {
		c.finalize(now)
	}
}

func mismatch(r *Request, win *window) string {
	if win.request != nil && mayClose(r, win) {
		return "the open commit window already carries CommitRequest " + win.request.ID + "; it was left alone"
	}
	return "the open commit window holds changes by " + win.author.Name + ", not by the submitter; it was left alone"
}

// nextDeadline is the earliest deadline of a request the core holds that
// has not closed its window yet.
func (c *Core) nextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	consider := func(t time.Time) {
		if !found || t.Before(next) {
			next, found = t, true
		}
	}
	for _, r := range c.commitRequests {
		consider(r.Deadline)
	}
	if c.window != nil && c.window.request != nil {
		consider(c.window.request.Deadline)
	}
	return next, found
}

// pushed ends the request a window carried once the window went through.
// The executor adds where the commit is (Branch, URL).
func (c *Core) pushed(win *window, committed bool) {
	r := win.request
	if r == nil {
		return
	}
	win.request = nil
	switch {
	case !committed && win.refused > 0:
		c.end(r, RequestOutcome{Reason: RequestFinalizeFailed, Detail: fmt.Sprintf(
			"nothing was committed: the operator does not write %d of the window's objects (the GitTarget's ObjectsWritten condition says why)", win.refused)})
	case !committed:
		c.end(r, RequestOutcome{Reason: RequestAlreadyPresent, Detail: "every change of the commit window was already in Git; nothing to commit"})
	default:
		c.end(r, RequestOutcome{Reason: RequestCommitted, Commit: win.commit, Detail: "committed and pushed"})
	}
}

// failRequest ends the request of a window whose commit failed, and
// failHeld that of a window a failure holds back (an earlier window of its
// target, or of the branch, failed and is retried at until). The writes
// stay pending and are retried, with the request's message, but the
// request reports the failure now instead of staying in progress for as
// long as the forge keeps failing.
func (c *Core) failRequest(win *window, err error) {
	c.endFailed(win, err.Error()+"; the changes are kept and retried")
}

func (c *Core) failHeld(win *window, until time.Time) {
	c.endFailed(win, "an earlier commit of this branch failed and is retried at "+until.UTC().Format(time.RFC3339)+
		"; the changes are kept and committed after it")
}

func (c *Core) endFailed(win *window, detail string) {
	if r := win.request; r != nil {
		win.request = nil
		c.end(r, RequestOutcome{Reason: RequestFinalizeFailed, Detail: detail})
	}
}

// dropRequests ends every request of target (all when target is nil):
// the worker or the target is going away.
func (c *Core) dropRequests(target *TargetKey, why string) {
	fail := func(r *Request) { c.end(r, RequestOutcome{Reason: RequestFinalizeFailed, Detail: why}) }
	kept := c.commitRequests[:0]
	for _, r := range c.commitRequests {
		if target != nil && r.Target != *target {
			kept = append(kept, r)
			continue
		}
		fail(r)
	}
	clear(c.commitRequests[len(kept):])
	c.commitRequests = kept
	for _, win := range c.held() {
		if win.request != nil && (target == nil || win.target == *target) {
			fail(win.request)
			win.request = nil
		}
	}
}

// end asks the executor to tell r its outcome.
func (c *Core) end(r *Request, o RequestOutcome) {
	c.notify(Outcome{Kind: OutcomeRequest, Target: r.Target, Request: r, Result: o})
}

func (r *Request) answer(o RequestOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcome = &o
}
