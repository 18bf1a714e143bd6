package github

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// credential is who a request authenticated as.
type credential struct {
	// kind is "token" (a personal access token) or "installation".
	kind           string
	installationID int64
	// expiresAt is when an installation token stops working; zero for
	// personal access tokens.
	expiresAt time.Time
	// identity authors and commits when a request names nobody (docCommits:
	// "the authenticated user's information and the current date").
	identity object.Signature
	// budget is the primary rate-limit bucket: one per token, one per
	// installation (shared by its tokens).
	budget string
}

type app struct {
	id            int64
	publicKey     *rsa.PublicKey
	installations map[int64]bool
	slug          string
}

type authState struct {
	tokens map[string]*credential
	apps   map[int64]*app
}

func newAuthState() authState {
	return authState{tokens: map[string]*credential{}, apps: map[int64]*app{}}
}

// AddToken makes token a valid personal access token.
func (s *Server) AddToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth.tokens[token] = &credential{
		kind:     "token",
		identity: object.Signature{Name: "sim-user", Email: "sim-user@users.noreply.github.com"},
		budget:   "token:" + token,
	}
}

// RegisterApp registers a GitHub App by its id and the public half of its
// private key, installed as installationID on every repository.
func (s *Server) RegisterApp(appID, installationID int64, publicKey *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	registered, ok := s.auth.apps[appID]
	if !ok {
		registered = &app{id: appID, installations: map[int64]bool{}, slug: fmt.Sprintf("sim-app-%d", appID)}
		s.auth.apps[appID] = registered
	}
	registered.publicKey = publicKey
	registered.installations[installationID] = true
}

// ExpireInstallationTokens ends every installation token issued so far, as
// if its hour had passed: later requests with them get 401.
func (s *Server) ExpireInstallationTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.config.now()
	for _, cred := range s.auth.tokens {
		if cred.kind == "installation" {
			cred.expiresAt = now
		}
	}
}

// InstallationTokensIssued counts the installation tokens handed out.
func (s *Server) InstallationTokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, cred := range s.auth.tokens {
		if cred.kind == "installation" {
			n++
		}
	}
	return n
}

// bearer extracts the token of "Authorization: token X" or "Bearer X";
// "In most cases, you can use Authorization: Bearer or Authorization: token
// to pass a token" (docAuth).
func bearer(r *http.Request) string {
	header := r.Header.Get("Authorization")
	for _, scheme := range []string{"token ", "Bearer ", "bearer "} {
		if token, ok := strings.CutPrefix(header, scheme); ok {
			return strings.TrimSpace(token)
		}
	}
	return ""
}

// authenticate identifies the request's credential. Without a token the
// repository is invisible: "If you try to use a REST API endpoint without a
// token or with a token that has insufficient permissions, you will receive
// a 404 Not Found or 403 Forbidden response" (docAuth; the simulated
// repositories are private). An unknown or expired token is 401
// ("Authenticating with invalid credentials will initially return a 401
// Unauthorized response", docAuth; installation tokens "expire after 1
// hour", docAppToken). Refused requests count against the unauthenticated
// budget, whose headers they carry.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*credential, bool) {
	token := bearer(r)
	cred, known := s.auth.tokens[token]
	if known && (cred.expiresAt.IsZero() || s.config.now().Before(cred.expiresAt)) {
		return cred, true
	}
	s.countUnauthenticated(w)
	if token == "" {
		notFound(w, docRepos)
		return nil, false
	}
	writeError(w, http.StatusUnauthorized, "Bad credentials", docAuth)
	return nil, false
}

// createInstallationToken is "Create an installation access token for an
// app": POST /app/installations/{id}/access_tokens with the App's JWT
// (docAppToken), answering the token and when it expires.
func (s *Server) createInstallationToken(w http.ResponseWriter, r *http.Request) {
	issuer, err := s.verifyAppJWT(bearer(r))
	if err != nil {
		writeError(w, http.StatusUnauthorized, err.Error(), docJWT)
		return
	}
	installationID, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || !issuer.installations[installationID] {
		notFound(w, docAppToken)
		return
	}
	token, err := randomToken("ghs_")
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), docAppToken)
		return
	}
	expires := s.config.now().Add(s.config.installationTokenTTL)
	s.auth.tokens[token] = &credential{
		kind: "installation", installationID: installationID, expiresAt: expires,
		identity: object.Signature{Name: issuer.slug + "[bot]", Email: fmt.Sprintf("%d+%s[bot]@users.noreply.github.com", issuer.id, issuer.slug)},
		budget:   fmt.Sprintf("installation:%d", installationID),
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"token":                token,
		"expires_at":           expires.UTC().Format(time.RFC3339),
		"permissions":          map[string]string{"contents": "write", "metadata": "read"},
		"repository_selection": "all",
	})
}

func randomToken(prefix string) (string, error) {
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return prefix + hex.EncodeToString(raw), nil
}

type jwtClaims struct {
	IssuedAt  int64           `json:"iat"`
	ExpiresAt int64           `json:"exp"`
	Issuer    json.RawMessage `json:"iss"`
}

// clockDrift is the skew GitHub's documentation anticipates: it suggests
// setting iat "60 seconds in the past" (docJWT).
const clockDrift = 60 * time.Second

// verifyAppJWT checks a GitHub App JWT as documented (docJWT): signed with
// RS256 by the App's private key, iss the App id, exp in the future and "no
// more than 10 minutes into the future".
func (s *Server) verifyAppJWT(raw string) (*app, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, errors.New("A JSON web token could not be decoded")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	var claims jwtClaims
	if decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil {
		return nil, errors.New("A JSON web token could not be decoded")
	}
	if header.Alg != "RS256" {
		return nil, fmt.Errorf("'alg' must be RS256, got %q", header.Alg)
	}
	issuer, err := s.appOf(claims.Issuer)
	if err != nil {
		return nil, err
	}
	signature, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, errors.New("A JSON web token could not be decoded")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(issuer.publicKey, crypto.SHA256, digest[:], signature) != nil {
		return nil, errors.New("A JSON web token could not be decoded")
	}
	now := s.config.now()
	issuedAt, expiresAt := time.Unix(claims.IssuedAt, 0), time.Unix(claims.ExpiresAt, 0)
	switch {
	case !expiresAt.After(now):
		return nil, errors.New("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	case issuedAt.After(now.Add(clockDrift)):
		return nil, errors.New("'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued")
	case expiresAt.Sub(issuedAt) > 10*time.Minute+clockDrift:
		return nil, errors.New("'Expiration time' claim ('exp') is too far in the future")
	}
	return issuer, nil
}

func decodeSegment(segment string, into any) error {
	raw, err := base64.RawURLEncoding.DecodeString(segment)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

// appOf finds the App an iss claim names; GitHub accepts the App id as a
// number or a string.
func (s *Server) appOf(issuer json.RawMessage) (*app, error) {
	text := strings.Trim(string(issuer), `"`)
	id, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, errors.New("'Issuer' claim ('iss') must be an Integer")
	}
	found, ok := s.auth.apps[id]
	if !ok || found.publicKey == nil {
		return nil, fmt.Errorf("Integration not found: %d", id)
	}
	return found, nil
}
