package gogit

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/configbutler/gitops-reverser/forges"
)

// classify maps an error from go-git, the SSH client or the network onto
// the shared vocabulary, keeping err wrapped. Errors that are already
// forge errors pass through.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var forgeErr *forges.Error
	if errors.As(err, &forgeErr) {
		return err
	}
	if status, retryAfter, ok := httpStatus(err); ok {
		return classifyHTTPStatus(op, status, retryAfter, err)
	}
	err = withoutEcho(err)
	var hostKeyErr *hostKeyError
	message := err.Error()
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return forges.Errorf(forges.KindUnauthorized, op, err)
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return forges.Errorf(forges.KindForbidden, op, err)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return forges.Errorf(forges.KindNotFound, op, err)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return forges.Errorf(forges.KindEmptyRepository, op, err)
	case errors.Is(err, git.NoMatchingRefSpecError{}):
		return forges.Errorf(forges.KindNotFound, op, err)
	case strings.Contains(message, "not our ref"):
		// upload-pack refusing a wanted commit id it does not have (or
		// will not serve).
		return forges.Errorf(forges.KindNotFound, op, err)
	case errors.As(err, &hostKeyErr):
		// Retrying cannot help and the credentials are not the problem:
		// this is the server's identity, which the message names.
		return forges.Errorf(forges.KindForbidden, op, err)
	case strings.Contains(message, "unable to authenticate"):
		// x/crypto/ssh's handshake error when the server refuses every key.
		return forges.Errorf(forges.KindUnauthorized, op, err)
	case isRefUpdateConflict(message):
		return forges.Errorf(forges.KindConflict, op, err)
	}
	return forges.Errorf(forges.KindTransient, op, err)
}

// withoutEcho drops the response body go-git appends to its sentinel
// errors ("%w: %s") when the body says nothing more than the sentinel
// does, as a plain Git server's 401 does: "authentication required:
// authentication required". errors.Is still finds the sentinel.
func withoutEcho(err error) error {
	for _, sentinel := range []error{transport.ErrAuthenticationRequired, transport.ErrAuthorizationFailed, transport.ErrRepositoryNotFound} {
		if !errors.Is(err, sentinel) {
			continue
		}
		message, said := err.Error(), sentinel.Error()
		at := strings.LastIndex(message, said+":")
		if at < 0 {
			return err
		}
		reason := strings.TrimSpace(message[at+len(said)+1:])
		if reason != "" && !strings.EqualFold(reason, said) {
			return err
		}
		return &echoless{message: message[:at+len(said)], err: err}
	}
	return err
}

// echoless is an error shown with a shorter message than it has.
type echoless struct {
	message string
	err     error
}

func (e *echoless) Error() string { return e.message }
func (e *echoless) Unwrap() error { return e.err }

// isEmptyRemote reports go-git's answer for a repository without refs.
func isEmptyRemote(err error) bool {
	return errors.Is(err, transport.ErrEmptyRemoteRepository)
}

// isRefUpdateConflict recognises the words go-git and receive-pack use
// when a ref was not where the update expected it: go-git's own
// fast-forward and lease checks, and git's ref transaction ("cannot lock
// ref ... is at X but expected Y", "reference already exists", reported as
// "failed to update ref").
func isRefUpdateConflict(message string) bool {
	for _, phrase := range [...]string{
		"non-fast-forward",
		"fetch first",
		"stale info",
		"failed to update ref",
		"failed to lock",
		"cannot lock ref",
		"reference already exists",
		"incorrect old value",
		"reference has changed",
		"required to be",
	} {
		if strings.Contains(message, phrase) {
			return true
		}
	}
	return false
}

// httpStatus digs the status out of go-git's HTTP error, which go-git wraps
// in a plumbing.UnexpectedError that does not implement Unwrap.
func httpStatus(err error) (status int, retryAfter time.Duration, ok bool) {
	var unexpected *plumbing.UnexpectedError
	if !errors.As(err, &unexpected) {
		return 0, 0, false
	}
	var httpErr *githttp.Err
	if !errors.As(unexpected.Err, &httpErr) || httpErr.Response == nil {
		return 0, 0, false
	}
	seconds, parseErr := strconv.Atoi(httpErr.Response.Header.Get("Retry-After"))
	if parseErr == nil && seconds > 0 {
		retryAfter = time.Duration(seconds) * time.Second
	}
	return httpErr.Response.StatusCode, retryAfter, true
}

// classifyHTTPStatus covers the statuses go-git leaves unclassified (it
// maps 401, 403 and 404 to its own errors, handled in classify).
func classifyHTTPStatus(op string, status int, retryAfter time.Duration, err error) error {
	switch status {
	case http.StatusTooManyRequests:
		return &forges.Error{Kind: forges.KindRateLimited, Op: op, RetryAfter: retryAfter, Err: err}
	case http.StatusRequestEntityTooLarge:
		return forges.Errorf(forges.KindTooLarge, op, err)
	case http.StatusUnauthorized:
		return forges.Errorf(forges.KindUnauthorized, op, err)
	case http.StatusForbidden:
		return forges.Errorf(forges.KindForbidden, op, err)
	case http.StatusNotFound:
		return forges.Errorf(forges.KindNotFound, op, err)
	}
	return forges.Errorf(forges.KindTransient, op, err)
}
