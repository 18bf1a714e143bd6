package github

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
)

// classify maps an error from go-github, ghinstallation or the network onto
// the shared vocabulary, keeping it wrapped. Statuses in conflictOn mean
// "the branch or a file moved" for the call at hand (422 on a ref update,
// for one), and are KindConflict.
//
// GitHub's statuses (https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api):
// 401 refused credentials, 403 missing permission (or a rate limit, see
// rateLimitWait), 404 not found (also what a private repository looks like
// to credentials that cannot see it), 409 an empty repository on the Git
// Database API, 422 validation failed, 5xx a server fault.
func (c *Client) classify(op string, err error, conflictOn ...int) error {
	if err == nil {
		return nil
	}
	var forgeErr *forges.Error
	if errors.As(err, &forgeErr) {
		// Refused locally by limitTransport: keep the kind and the wait,
		// name the operation.
		return &forges.Error{Kind: forgeErr.Kind, Op: op, RetryAfter: forgeErr.RetryAfter, Err: forgeErr.Err}
	}
	resp, message := responseOf(err)
	if resp == nil {
		return forges.Errorf(forges.KindTransient, op, err)
	}
	if wait, limited := rateLimitWait(resp, message, c.limits.now()); limited {
		if resp.Request != nil {
			c.limits.holdBack(resp.Request.Method, wait)
		}
		return &forges.Error{Kind: forges.KindRateLimited, Op: op, RetryAfter: wait, Err: err}
	}
	if slices.Contains(conflictOn, resp.StatusCode) {
		return forges.Errorf(forges.KindConflict, op, err)
	}
	return forges.Errorf(kindOfStatus(resp.StatusCode, message, isTokenExchange(err)), op, err)
}

// isTokenExchange: the error is ghinstallation's, from exchanging the
// App's JWT for an installation token. ghinstallation leaves that
// response's body open for the caller, so it is closed here.
func isTokenExchange(err error) bool {
	var exchange *ghinstallation.HTTPError
	if !errors.As(err, &exchange) {
		return false
	}
	if exchange.Response != nil && exchange.Response.Body != nil {
		_ = exchange.Response.Body.Close()
	}
	return true
}

func kindOfStatus(status int, message string, tokenExchange bool) forges.Kind {
	switch {
	case status == http.StatusUnauthorized:
		return forges.KindUnauthorized
	case tokenExchange && status == http.StatusNotFound:
		// No such installation of this App: the credentials are wrong,
		// the repository may well exist.
		return forges.KindUnauthorized
	case status == http.StatusForbidden:
		return forges.KindForbidden
	case status == http.StatusNotFound:
		return forges.KindNotFound
	case status == http.StatusConflict && strings.Contains(strings.ToLower(message), "empty"):
		// "Git Repository is empty."
		return forges.KindEmptyRepository
	case status == http.StatusConflict:
		return forges.KindConflict
	case status == http.StatusRequestEntityTooLarge,
		status == http.StatusUnprocessableEntity && strings.Contains(strings.ToLower(message), "too large"):
		return forges.KindTooLarge
	}
	// 5xx, and validation failures the worker cannot fix either: retrying
	// is all that is left, and the worker bounds its retries.
	return forges.KindTransient
}

// responseOf digs the HTTP response and GitHub's message out of an error.
func responseOf(err error) (*http.Response, string) {
	var errorResponse *github.ErrorResponse
	var primary *github.RateLimitError
	var secondary *github.AbuseRateLimitError
	var exchange *ghinstallation.HTTPError
	switch {
	case errors.As(err, &errorResponse):
		return errorResponse.Response, errorResponse.Message
	case errors.As(err, &primary):
		return primary.Response, primary.Message
	case errors.As(err, &secondary):
		return secondary.Response, secondary.Message
	case errors.As(err, &exchange):
		return exchange.Response, exchange.Message
	}
	return nil, ""
}

// mentionsSecondaryLimit recognises GitHub's secondary rate limit message
// ("You have exceeded a secondary rate limit ...").
func mentionsSecondaryLimit(message string) bool {
	return strings.Contains(strings.ToLower(message), "secondary rate limit")
}
