package forges

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies a forge failure so the worker can decide what to do
// without knowing which forge answered.
type Kind int

const (
	// KindTransient is a failure worth retrying as is (5xx, a reset
	// connection).
	KindTransient Kind = iota
	// KindNotFound: the repository, branch, commit or file does not exist.
	KindNotFound
	// KindEmptyRepository: the repository has no commits yet.
	KindEmptyRepository
	// KindConflict: the branch head or a file moved since it was read.
	KindConflict
	// KindRateLimited: the forge asked to wait (see Error.RetryAfter).
	KindRateLimited
	// KindUnauthorized: the credentials were refused.
	KindUnauthorized
	// KindForbidden: the credentials lack permission.
	KindForbidden
	// KindTooLarge: the request or a file exceeds a forge limit.
	KindTooLarge
	// KindMergeConflict: a pull request's base does not merge into its head
	// without conflicts (BaseMerger); unlike KindConflict, reading again
	// does not help: the head must be rebuilt on the base.
	KindMergeConflict
)

var kindNames = [...]string{
	KindTransient: "transient", KindNotFound: "not found", KindEmptyRepository: "empty repository",
	KindConflict: "conflict", KindRateLimited: "rate limited", KindUnauthorized: "unauthorized",
	KindForbidden: "forbidden", KindTooLarge: "too large", KindMergeConflict: "merge conflict",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Sentinels for errors.Is: errors.Is(err, forges.ErrConflict) holds for any
// *Error of that kind.
var (
	ErrTransient       = &Error{Kind: KindTransient}
	ErrNotFound        = &Error{Kind: KindNotFound}
	ErrEmptyRepository = &Error{Kind: KindEmptyRepository}
	ErrConflict        = &Error{Kind: KindConflict}
	ErrRateLimited     = &Error{Kind: KindRateLimited}
	ErrUnauthorized    = &Error{Kind: KindUnauthorized}
	ErrForbidden       = &Error{Kind: KindForbidden}
	ErrTooLarge        = &Error{Kind: KindTooLarge}
	ErrMergeConflict   = &Error{Kind: KindMergeConflict}
)

// Error is a forge failure in the shared vocabulary, wrapping the forge's own
// error.
type Error struct {
	Kind Kind
	// Op is what was attempted ("read head of main", "update ref").
	Op string
	// RetryAfter is how long the forge asked to wait (rate limits).
	RetryAfter time.Duration
	Err        error
}

// Errorf builds an Error of kind for op, wrapping err.
func Errorf(kind Kind, op string, err error) *Error {
	return &Error{Kind: kind, Op: op, Err: err}
}

func (e *Error) Error() string {
	msg := e.Kind.String()
	if e.Op != "" {
		msg = e.Op + ": " + msg
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error of the same kind, which is what the sentinels
// are.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && t.Op == "" && t.Err == nil
}

// KindOf returns the kind of a forge error, KindTransient for anything else.
func KindOf(err error) Kind {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return KindTransient
}

// RetryAfter returns how long the forge asked to wait, or zero.
func RetryAfter(err error) time.Duration {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.RetryAfter
	}
	return 0
}
