package watch

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Cursor keeps a stream's resume point across restarts (in Redis). A
// stream with one first opens a normal watch from the stored
// resourceVersion; without one, or when the API server no longer has it,
// it replays as it always does.
type Cursor interface {
	// Load returns the stored resourceVersion, "" when there is none (never
	// stored, or expired).
	Load(ctx context.Context) (string, error)
	// Advance says every event up to resourceVersion has been handed to the
	// handler. It is called one call at a time, from the stream's goroutine
	// or, with Prepare, from the lane that finished an event; it must not
	// block: storing is the cursor's business, off the stream's path.
	Advance(resourceVersion string)
}

// Why a stream with a cursor started from a replay instead
// (Observer.ColdReplay).
const (
	// ColdNoCursor: no cursor was stored, it expired, or the cursor says
	// this start must not resume (Load returned "").
	ColdNoCursor = "no_cursor"
	// ColdUnavailable: the cursor could not be read (Redis did not answer).
	ColdUnavailable = "unavailable"
	// ColdExpired: the API server no longer serves the cursor's
	// resourceVersion ("too old resource version", compacted).
	ColdExpired = "expired"
	// ColdGone: the API server answered 410 Gone for the cursor.
	ColdGone = "gone"
	// ColdBranchRewritten: the branch no longer holds the commit the cursor
	// was stored against (a force-push took the changes it counts).
	ColdBranchRewritten = "branch_rewritten"
	// ColdResyncRequested: a user asked for a full resync of the target.
	ColdResyncRequested = "resync_requested"
)

// NotResumable is returned by Cursor.Load when a cursor was stored but must
// not be resumed from; Reason is what the cold replay is counted as
// (ColdBranchRewritten, ColdResyncRequested).
type NotResumable struct {
	Reason string
	// Why says it in words, for the log.
	Why string
}

func (e *NotResumable) Error() string { return e.Why }

// goneReason names a 410 answer for ColdReplay; "" for anything else.
func goneReason(err error) string {
	switch {
	case apierrors.IsResourceExpired(err):
		return ColdExpired
	case apierrors.IsGone(err):
		return ColdGone
	}
	return ""
}

// start decides where a stream begins: the cursor's resourceVersion, or ""
// for a replay (reported with its reason).
func (s *Stream) start(ctx context.Context) string {
	if s.Cursor == nil {
		return ""
	}
	rv, err := s.Cursor.Load(ctx)
	var refused *NotResumable
	switch {
	case errors.As(err, &refused):
		s.Log.Info("not resuming the watch from its cursor; replaying", "scope", s.Scope.String(), "reason", refused.Reason, "why", refused.Why)
		s.Observer.ColdReplay(s.Scope, refused.Reason)
		return ""
	case err != nil:
		s.Log.Info("cannot read the watch's resume cursor; replaying", "scope", s.Scope.String(), "error", err.Error())
		s.Observer.ColdReplay(s.Scope, ColdUnavailable)
		return ""
	case rv == "":
		s.Observer.ColdReplay(s.Scope, ColdNoCursor)
	default:
		s.resuming, s.catchingUp, s.shortWatches = true, true, 0
		s.versionsUnknown = s.TrackPrevious
	}
	return rv
}

// advance moves the cursor, when there is one, past a handled live event or
// bookmark; a resumed watch that got this far is no longer in doubt.
func (s *Stream) advance(resourceVersion string) {
	s.resuming = false
	switch {
	case s.Cursor == nil || resourceVersion == "":
	case s.lanes != nil:
		s.lanes.mark(resourceVersion) // after the live events before it
	default:
		s.Cursor.Advance(resourceVersion)
	}
}

// gone reports a 410 answer: a cold replay when it refused the cursor the
// stream started from.
func (s *Stream) gone(err error) {
	s.Observer.Gone(s.Scope)
	if s.resuming {
		s.resuming = false
		reason := goneReason(err)
		s.Log.Info("the API server no longer has the watch's resume point; replaying", "scope", s.Scope.String(), "reason", reason)
		s.Observer.ColdReplay(s.Scope, reason)
	}
}
