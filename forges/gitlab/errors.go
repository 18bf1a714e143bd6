package gitlab

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/configbutler/gitops-reverser/forges"
)

// MovedHeadError says that GitLab made the commit, but on top of a head
// other than the expected one: another writer moved the branch between
// the client's head check and its commit. The other writer's files were
// not touched (any file both changed is refused by last_commit_id), so
// nothing of theirs is lost; the caller must re-read the head before
// planning again. It is always wrapped in a forges.Error of
// forges.KindConflict.
type MovedHeadError struct {
	// Commit is the commit GitLab made; the branch points at it.
	Commit string
	// Parents are its parents as GitLab reports them.
	Parents []string
	// Expected is the head the commit was meant for ("" for the first
	// commit of an empty repository).
	Expected string
}

func (e *MovedHeadError) Error() string {
	expected := e.Expected
	if expected == "" {
		expected = "no parent"
	}
	return fmt.Sprintf("GitLab made commit %s on top of %v, not %s: another writer moved the branch meanwhile; "+
		"their changes are kept, re-read the head", e.Commit, e.Parents, expected)
}

// classify maps a client-go error onto the shared vocabulary, keeping it
// wrapped. resp may be nil (the request never got an answer).
//
// Statuses per https://docs.gitlab.com/api/rest/troubleshooting/#status-codes;
// 429 and its Retry-After per
// https://docs.gitlab.com/administration/settings/user_and_ip_rate_limits/#response-headers.
func classify(op string, resp *gl.Response, err error) error {
	if err == nil {
		return nil
	}
	var forgeErr *forges.Error
	if errors.As(err, &forgeErr) {
		return err
	}
	// client-go answers every 404 with its ErrNotFound sentinel, without
	// the body.
	if errors.Is(err, gl.ErrNotFound) {
		return forges.Errorf(forges.KindNotFound, op, err)
	}
	var apiErr *gl.ErrorResponse
	if !errors.As(err, &apiErr) || apiErr.Response == nil {
		// No HTTP answer: a reset connection, a timeout, a cancelled
		// context (still visible to errors.Is through the wrap).
		return forges.Errorf(forges.KindTransient, op, err)
	}
	status := apiErr.Response.StatusCode
	switch {
	case status == http.StatusBadRequest:
		return forges.Errorf(badRequestKind(apiErr.Message), op, err)
	case status == http.StatusUnauthorized:
		return forges.Errorf(forges.KindUnauthorized, op, err)
	case status == http.StatusForbidden:
		return forges.Errorf(forges.KindForbidden, op, err)
	case status == http.StatusConflict:
		return forges.Errorf(forges.KindConflict, op, err)
	case status == http.StatusRequestEntityTooLarge:
		return forges.Errorf(forges.KindTooLarge, op, err)
	case status == http.StatusTooManyRequests:
		limited := forges.Errorf(forges.KindRateLimited, op, err)
		limited.RetryAfter = retryAfter(apiErr.Response.Header, time.Now())
		return limited
	}
	return forges.Errorf(forges.KindTransient, op, err)
}

// badRequestKind reads a 400's message. Refusals that say the branch or a
// file moved are conflicts; a start_sha or ref GitLab does not have is a
// missing commit. Anything else is a request GitLab did not accept for another
// reason, reported as transient like any unrecognised failure.
func badRequestKind(message string) forges.Kind {
	// The commits API's refusals that mean the branch or a file is not
	// where the request expected it: lib/api/commits.rb,
	// Commits::CreateService and Files::MultiService in gitlab-org/gitlab,
	// and Gitaly's index errors (gitlab-org/gitaly
	// internal/git2go/commit.go).
	conflicts := [...]string{
		"has changed since you started editing it",
		"A file with this name already exists",
		"A file with this name doesn't exist",
		"A directory with this name already exists",
		"already exists. Switch to that branch",
		"You can only create or edit files when you are on a branch",
	}
	for _, phrase := range conflicts {
		if strings.Contains(message, phrase) {
			return forges.KindConflict
		}
	}
	// The merge-base API names refs it does not have ("Could not find
	// ref: <sha>", lib/api/repositories.rb).
	if strings.Contains(message, "Cannot find start_sha") || strings.Contains(message, "Could not find ref") {
		return forges.KindNotFound
	}
	return forges.KindTransient
}

// retryAfter is how long a 429 asked to wait: Retry-After in seconds (or
// an HTTP date), else until RateLimit-Reset, else zero.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After"); v != "" {
		if seconds, err := strconv.Atoi(v); err == nil {
			return time.Duration(max(seconds, 0)) * time.Second
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(now), 0)
		}
	}
	if unix, err := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64); err == nil {
		return max(time.Unix(unix, 0).Sub(now), 0)
	}
	return 0
}
