package gitea

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/configbutler/gitops-reverser/forges"
)

// isConflictMessage recognises the words of Gitea's answers, and of the
// git push it runs, when something moved under the request: a file's blob
// ("sha does not match"), the branch head ("branch commit does not match",
// a non-fast-forward, "Force push ... need a confirm force parameter"), a
// path or branch that appeared ("already exists"), or the ref lock lost to
// a concurrent push ("cannot lock ref"; "push is rejected" is what Gitea
// reports for git's local stale-lease refusal, which has no remote text).
func isConflictMessage(message string) bool {
	return containsAny(message,
		"sha does not match", "branch commit does not match", "commit id does not match",
		"already exists", "cannot lock ref", "push is rejected", "stale info",
		"non-fast-forward", "fetch first", "failed to update ref", "pushoutofdate", "force push")
}

// isMissingObjectMessage recognises how git/trees and git/blobs say that
// an object does not exist, which they answer with 400 rather than 404.
func isMissingObjectMessage(message string) bool {
	return containsAny(message, "sha not found", "object does not exist")
}

// classify maps an error of call onto the forges vocabulary for op,
// keeping it wrapped. Forge errors pass through. A 4xx that none of the
// kinds describe (a request Gitea finds invalid) stays a plain error.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var forgeErr *forges.Error
	if errors.As(err, &forgeErr) {
		return err
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		// No answer at all: a refused or reset connection, a timeout.
		return forges.Errorf(forges.KindTransient, op, err)
	}
	message := strings.ToLower(apiErr.Message)
	status := apiErr.StatusCode
	switch {
	case status == http.StatusUnauthorized:
		return forges.Errorf(forges.KindUnauthorized, op, err)
	case status == http.StatusTooManyRequests:
		return &forges.Error{Kind: forges.KindRateLimited, Op: op, RetryAfter: apiErr.RetryAfter, Err: err}
	case status == http.StatusRequestEntityTooLarge:
		return forges.Errorf(forges.KindTooLarge, op, err)
	case status == http.StatusConflict, isConflictMessage(message):
		return forges.Errorf(forges.KindConflict, op, err)
	case status == http.StatusForbidden:
		return forges.Errorf(forges.KindForbidden, op, err)
	case status == http.StatusNotFound,
		status == http.StatusBadRequest && isMissingObjectMessage(message):
		return forges.Errorf(forges.KindNotFound, op, err)
	case status >= 500:
		return forges.Errorf(forges.KindTransient, op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func containsAny(s string, phrases ...string) bool {
	for _, phrase := range phrases {
		if strings.Contains(s, phrase) {
			return true
		}
	}
	return false
}

// asConflict reclassifies err as a conflict, keeping what it wraps, when
// the cause turned out to be a moved branch.
func asConflict(op string, err error, why string) error {
	return forges.Errorf(forges.KindConflict, op, fmt.Errorf("%s: %w", why, err))
}
