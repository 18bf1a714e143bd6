package gitlab_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gitlab"
)

// TestStatusesMapOntoTheSharedVocabulary answers each probe with one
// status and body, as GitLab would, and checks the kind the client
// reports.
func TestStatusesMapOntoTheSharedVocabulary(t *testing.T) {
	tests := []struct {
		status  int
		header  http.Header
		body    string
		kind    forges.Kind
		waitFor time.Duration
	}{
		{http.StatusUnauthorized, nil, `{"message":"401 Unauthorized"}`, forges.KindUnauthorized, 0},
		{http.StatusForbidden, nil, `{"message":"403 Forbidden"}`, forges.KindForbidden, 0},
		{http.StatusNotFound, nil, `{"message":"404 Project Not Found"}`, forges.KindNotFound, 0},
		{http.StatusRequestEntityTooLarge, nil, `{"message":"413 Request Entity Too Large"}`, forges.KindTooLarge, 0},
		{http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}}, "Retry later\n", forges.KindRateLimited, 30 * time.Second},
		{http.StatusBadRequest, nil, `{"message":"The file has changed since you started editing it: a.yaml"}`, forges.KindConflict, 0},
		{http.StatusBadRequest, nil, `{"message":"A file with this name already exists"}`, forges.KindConflict, 0},
		{http.StatusBadRequest, nil, `{"message":"A file with this name doesn't exist"}`, forges.KindConflict, 0},
		{http.StatusBadRequest, nil, `{"message":"Cannot find start_sha 'abc'"}`, forges.KindNotFound, 0},
		{http.StatusInternalServerError, nil, `{"message":"500 Internal Server Error"}`, forges.KindTransient, 0},
		{http.StatusBadGateway, nil, "bad gateway", forges.KindTransient, 0},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status)+" "+tt.body, func(t *testing.T) {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header()[k] = v
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer server.Close()
			client, err := gitlab.New(gitlab.Options{APIURL: server.URL + "/api/v4", Project: "g/r", Token: "t"})
			require.NoError(t, err)
			err = client.Probe(context.Background())
			require.Equal(t, tt.kind, forges.KindOf(err), "%v", err)
			require.Equal(t, tt.waitFor, forges.RetryAfter(err))
		})
	}
}

func TestCommitURLNeedsAProjectPath(t *testing.T) {
	byPath, err := gitlab.New(gitlab.Options{APIURL: "https://gitlab.example.com/api/v4", Project: "group/sub/repo", Token: "t"})
	require.NoError(t, err)
	require.Equal(t, "https://gitlab.example.com/group/sub/repo/-/commit/abc", byPath.CommitURL("abc"))
	byID, err := gitlab.New(gitlab.Options{APIURL: "https://gitlab.example.com/api/v4", Project: "42", Token: "t"})
	require.NoError(t, err)
	require.Empty(t, byID.CommitURL("abc"))
}
