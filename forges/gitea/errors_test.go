package gitea

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

// TestStatusMapping serves canned Gitea answers, including the ones a
// loopback Gitea never gives (rate limits, 413, 502), and checks the kind
// and that the answer stays wrapped.
func TestStatusMapping(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		retryAfter string
		want       forges.Kind
		wantWait   time.Duration
	}{
		{"unknown token", 401, `{"message":"invalid username, password or token"}`, "", forges.KindUnauthorized, 0},
		{"no write permission", 403, `{"message":"user should have a permission to write to the target branch"}`, "", forges.KindForbidden, 0},
		{"protected branch", 403, `{"message":"Not allowed to push to protected branch main"}`, "", forges.KindForbidden, 0},
		{"lost ref lock", 403, `{"message":"cannot lock ref 'refs/heads/main': is at a but expected b"}`, "", forges.KindConflict, 0},
		{"stale lease", 403, `{"message":"push is rejected"}`, "", forges.KindConflict, 0},
		{"missing", 404, `{"message":"not found"}`, "", forges.KindNotFound, 0},
		{"missing object", 400, `{"message":"sha not found [1234]"}`, "", forges.KindNotFound, 0},
		{"branch exists", 409, `{"message":"The branch already exists."}`, "", forges.KindConflict, 0},
		{"file changed", 422, `{"message":"sha does not match [given: a, expected: b]"}`, "", forges.KindConflict, 0},
		{"head moved", 422, `{"message":"branch commit does not match [expected: a, given: b]"}`, "", forges.KindConflict, 0},
		{"file appeared", 422, `{"message":"repository file already exists [path: a.yaml]"}`, "", forges.KindConflict, 0},
		{"too large", 413, `request entity too large`, "", forges.KindTooLarge, 0},
		{"rate limited", 429, `{"message":"slow down"}`, "7", forges.KindRateLimited, 7 * time.Second},
		{"rate limited without a wait", 429, ``, "", forges.KindRateLimited, 0},
		{"push out of date", 500, `{"message":"PushOutOfDate Error: exit status 1 - ! [rejected] (non-fast-forward)"}`, "", forges.KindConflict, 0},
		{"hidden internal error", 500, `{"message":""}`, "", forges.KindTransient, 0},
		{"bad gateway", 502, `<html>bad gateway</html>`, "", forges.KindTransient, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := cannedServer(t, tt.status, tt.body, tt.retryAfter)
			_, err := client.Head(testContext(t), "main")
			require.Error(t, err)
			require.Equal(t, tt.want, forges.KindOf(err), "%v", err)
			require.Equal(t, tt.wantWait, forges.RetryAfter(err))
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, tt.status, apiErr.StatusCode)
		})
	}
}

// TestInvalidRequestIsNotAKind: a 422 that says the request itself is
// wrong (a directory where a file goes) has no kind in the vocabulary and
// is not dressed up as one.
func TestInvalidRequestIsNotAKind(t *testing.T) {
	client := cannedServer(t, 422, `{"message":"a directory exists where you’re trying to create a file [path: a]"}`, "")
	_, err := client.Head(testContext(t), "main")
	require.Error(t, err)
	var forgeErr *forges.Error
	require.False(t, errors.As(err, &forgeErr), "%v", err)
	require.ErrorContains(t, err, "a directory exists")
}

func TestNetworkFailureIsTransient(t *testing.T) {
	unreachable := httptest.NewServer(http.NotFoundHandler())
	unreachable.Close()
	client, err := New(Options{BaseURL: unreachable.URL, Owner: "o", Repo: "r", Token: "t"})
	require.NoError(t, err)
	_, err = client.Head(testContext(t), "main")
	require.ErrorIs(t, err, forges.ErrTransient)
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.Equal(t, 30*time.Second, parseRetryAfter("30", now))
	require.Equal(t, 90*time.Second, parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now))
	require.Zero(t, parseRetryAfter("", now))
	require.Zero(t, parseRetryAfter("soon", now))
	require.Zero(t, parseRetryAfter("-5", now))
}

// cannedServer is a client of a server that answers every request with
// status and body (and Retry-After when set), checking the token header.
func cannedServer(t *testing.T, status int, body, retryAfter string) *Client {
	t.Helper()
	canned := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token secret" {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(canned.Close)
	client, err := New(Options{BaseURL: canned.URL, Owner: "owner", Repo: "repo", Token: "secret"})
	require.NoError(t, err)
	return client
}
