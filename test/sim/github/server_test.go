package github_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

const token = "ghp_test"

func start(t *testing.T, opts ...simgithub.Option) *simgithub.Server {
	t.Helper()
	s := simgithub.Start(opts...)
	t.Cleanup(s.Close)
	s.AddToken(token)
	return s
}

// call sends a JSON request and decodes the JSON answer.
func call(t *testing.T, s *simgithub.Server, method, path, auth string, body any) (*http.Response, map[string]any) {
	t.Helper()
	var payload bytes.Buffer
	if body != nil {
		require.NoError(t, json.NewEncoder(&payload).Encode(body))
	}
	req, err := http.NewRequest(method, s.URL()+path, &payload)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp, out
}

func TestUpdateRefRefusesANonFastForward(t *testing.T) {
	s := start(t)
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a.yaml": "a: 1\n"}))
	base, err := s.HeadCommit("o", "r", "main")
	require.NoError(t, err)
	moved, err := s.Commit("o", "r", "main", map[string]string{"b.yaml": "b: 1\n"}, "external")
	require.NoError(t, err)

	_, commit := call(t, s, "POST", "/repos/o/r/git/commits", "token "+token, map[string]any{
		"message": "stale", "tree": base.Tree, "parents": []string{base.SHA},
	})
	resp, body := call(t, s, "PATCH", "/repos/o/r/git/refs/heads/main", "Bearer "+token,
		map[string]any{"sha": commit["sha"], "force": false})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Equal(t, "Update is not a fast forward", body["message"])
	require.Contains(t, body["documentation_url"], "git/refs")
	head, err := s.HeadCommit("o", "r", "main")
	require.NoError(t, err)
	require.Equal(t, moved, head.SHA, "the branch did not move")

	_, onTop := call(t, s, "POST", "/repos/o/r/git/commits", "token "+token, map[string]any{
		"message": "on top", "tree": base.Tree, "parents": []string{moved},
	})
	resp, _ = call(t, s, "PATCH", "/repos/o/r/git/refs/heads/main", "token "+token, map[string]any{"sha": onTop["sha"]})
	require.Equal(t, http.StatusOK, resp.StatusCode, "a fast forward is accepted")
}

func TestEmptyRepositoryAnswers409UntilTheContentsAPIWritesAFile(t *testing.T) {
	s := start(t)
	require.NoError(t, s.CreateRepo("o", "empty", nil))
	for _, probe := range []struct{ method, path string }{
		{"GET", "/repos/o/empty/git/ref/heads/main"},
		{"POST", "/repos/o/empty/git/trees"},
		{"POST", "/repos/o/empty/git/blobs"},
	} {
		resp, body := call(t, s, probe.method, probe.path, "token "+token, map[string]any{"tree": []any{}, "content": "x"})
		require.Equal(t, http.StatusConflict, resp.StatusCode, probe.path)
		require.Equal(t, "Git Repository is empty.", body["message"])
	}
	resp, body := call(t, s, "PUT", "/repos/o/empty/contents/dir/first.yaml", "token "+token, map[string]any{
		"message": "first", "content": base64.StdEncoding.EncodeToString([]byte("first: true\n")), "branch": "main",
		"author": map[string]string{"name": "A", "email": "a@example.com", "date": "2026-03-04T05:06:07Z"},
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	content, ok := s.File("o", "empty", "main", "dir/first.yaml")
	require.True(t, ok)
	require.Equal(t, "first: true\n", content)
	head, err := s.HeadCommit("o", "empty", "main")
	require.NoError(t, err)
	require.Equal(t, "A", head.Author.Name)
	require.True(t, head.Author.When.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)))
	resp, _ = call(t, s, "GET", "/repos/o/empty/git/ref/heads/main", "token "+token, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestSecondaryLimitRefusesContentCreationWithRetryAfter(t *testing.T) {
	clock := simgithub.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := start(t, simgithub.WithClock(clock.Now), simgithub.WithContentLimit(3, 500))
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a.yaml": "a: 1\n"}))
	blob := map[string]any{"content": "x"}
	for range 3 {
		resp, _ := call(t, s, "POST", "/repos/o/r/git/blobs", "token "+token, blob)
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		clock.Advance(10 * time.Second)
	}
	resp, body := call(t, s, "POST", "/repos/o/r/git/blobs", "token "+token, blob)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, body["message"], "secondary rate limit")
	require.Contains(t, body["documentation_url"], "secondary-rate-limits")
	require.Equal(t, "30", resp.Header.Get("Retry-After"), "the first of the three leaves the minute window in 30s")
	require.NotEqual(t, "0", resp.Header.Get("X-RateLimit-Remaining"), "the primary budget is not what ran out")

	resp, _ = call(t, s, "GET", "/repos/o/r/git/ref/heads/main", "token "+token, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "reads are not content creation")
	clock.Advance(30 * time.Second)
	resp, _ = call(t, s, "POST", "/repos/o/r/git/blobs", "token "+token, blob)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "after retry-after the request is accepted")
}

func TestPrimaryLimitHeadersAndExhaustion(t *testing.T) {
	clock := simgithub.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := start(t, simgithub.WithClock(clock.Now), simgithub.WithPrimaryLimit(2, http.StatusTooManyRequests))
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a.yaml": "a: 1\n"}))
	resp, _ := call(t, s, "GET", "/repos/o/r", "token "+token, nil)
	require.Equal(t, "2", resp.Header.Get("X-RateLimit-Limit"))
	require.Equal(t, "1", resp.Header.Get("X-RateLimit-Remaining"))
	require.Equal(t, "1", resp.Header.Get("X-RateLimit-Used"))
	require.Equal(t, "core", resp.Header.Get("X-RateLimit-Resource"))
	require.Equal(t, fmt.Sprint(clock.Now().Add(time.Hour).Unix()), resp.Header.Get("X-RateLimit-Reset"))
	call(t, s, "GET", "/repos/o/r", "token "+token, nil)
	resp, body := call(t, s, "GET", "/repos/o/r", "token "+token, nil)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
	require.Contains(t, body["message"], "API rate limit exceeded")
	clock.Advance(time.Hour)
	resp, _ = call(t, s, "GET", "/repos/o/r", "token "+token, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a new window starts at reset")
}

func TestBadCredentials(t *testing.T) {
	s := start(t)
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a.yaml": "a: 1\n"}))
	resp, body := call(t, s, "GET", "/repos/o/r/git/ref/heads/main", "token wrong", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "Bad credentials", body["message"])
	require.Equal(t, "60", resp.Header.Get("X-RateLimit-Limit"), "the unauthenticated budget")
	resp, _ = call(t, s, "GET", "/repos/o/r/git/ref/heads/main", "", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "without a token a private repository does not show")
}

func TestTreeIsTruncatedPastTheEntryLimit(t *testing.T) {
	s := start(t, simgithub.WithTreeEntryLimit(3))
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a/1": "1", "a/2": "2", "b/3": "3"}))
	resp, body := call(t, s, "GET", "/repos/o/r/git/trees/main?recursive=1", "token "+token, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, true, body["truncated"])
	require.Len(t, body["tree"], 3)
}

// signJWT signs a GitHub App JWT the way the documentation describes:
// RS256, iss the App id, iat and exp in epoch seconds.
func signJWT(t *testing.T, key *rsa.PrivateKey, appID int64, issuedAt, expiresAt time.Time) string {
	t.Helper()
	segment := func(v any) string {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	unsigned := segment(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." +
		segment(map[string]any{"iat": issuedAt.Unix(), "exp": expiresAt.Unix(), "iss": fmt.Sprint(appID)})
	digest := sha256.Sum256([]byte(unsigned))
	signature, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	require.NoError(t, err)
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(signature)
}

func TestAppJWTIsExchangedForAnInstallationTokenThatExpires(t *testing.T) {
	clock := simgithub.NewClock(time.Now())
	s := start(t, simgithub.WithClock(clock.Now), simgithub.WithInstallationTokenTTL(time.Hour))
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a.yaml": "a: 1\n"}))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	s.RegisterApp(42, 7, &key.PublicKey)
	now := clock.Now()

	resp, body := call(t, s, "POST", "/app/installations/7/access_tokens",
		"Bearer "+signJWT(t, other, 42, now, now.Add(5*time.Minute)), nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a JWT signed by another key is refused")
	resp, _ = call(t, s, "POST", "/app/installations/7/access_tokens",
		"Bearer "+signJWT(t, key, 42, now.Add(-20*time.Minute), now.Add(-10*time.Minute)), nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "an expired JWT is refused")
	resp, _ = call(t, s, "POST", "/app/installations/8/access_tokens",
		"Bearer "+signJWT(t, key, 42, now, now.Add(5*time.Minute)), nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "not an installation of this App")

	resp, body = call(t, s, "POST", "/app/installations/7/access_tokens",
		"Bearer "+signJWT(t, key, 42, now.Add(-time.Minute), now.Add(9*time.Minute)), nil)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	installationToken := body["token"].(string)
	require.Equal(t, now.Add(time.Hour).UTC().Format(time.RFC3339), body["expires_at"])
	resp, _ = call(t, s, "GET", "/repos/o/r", "token "+installationToken, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	clock.Advance(time.Hour)
	resp, body = call(t, s, "GET", "/repos/o/r", "token "+installationToken, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the token expired")
	require.Equal(t, "Bad credentials", body["message"])
}

func TestSignedCommitReportsThePayloadItSigned(t *testing.T) {
	s := start(t)
	require.NoError(t, s.CreateRepo("o", "r", map[string]string{"a.yaml": "a: 1\n"}))
	base, err := s.HeadCommit("o", "r", "main")
	require.NoError(t, err)
	resp, body := call(t, s, "POST", "/repos/o/r/git/commits", "token "+token, map[string]any{
		"message": "signed\n", "tree": base.Tree, "parents": []string{base.SHA},
		"author":    map[string]string{"name": "A", "email": "a@example.com", "date": "2026-03-04T05:06:07+02:00"},
		"signature": "-----BEGIN SSH SIGNATURE-----\nabc\n-----END SSH SIGNATURE-----\n",
	})
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	verification := body["verification"].(map[string]any)
	require.Equal(t, false, verification["verified"])
	payload := verification["payload"].(string)
	require.Equal(t, fmt.Sprintf("tree %s\nparent %s\nauthor A <a@example.com> 1772593567 +0200\n"+
		"committer A <a@example.com> 1772593567 +0200\n\nsigned\n", base.Tree, base.SHA), payload)
}
