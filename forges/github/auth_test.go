package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/gitfile"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

const (
	appID          = 1234
	installationID = 5678
)

// newAppKey generates an App private key and its PEM encoding.
func newAppKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// registerApp registers a GitHub App with the simulator and returns its
// PEM private key.
func registerApp(t *testing.T, sim *simgithub.Server) []byte {
	t.Helper()
	key, encoded := newAppKey(t)
	sim.RegisterApp(appID, installationID, &key.PublicKey)
	return encoded
}

func newAppClient(t *testing.T, sim *simgithub.Server, repo string, privateKey []byte) *forgegithub.Client {
	t.Helper()
	client, err := forgegithub.New(forgegithub.Options{Owner: owner, Repo: repo, APIURL: sim.URL(),
		App: &forgegithub.AppCredentials{AppID: appID, InstallationID: installationID, PrivateKey: privateKey}})
	require.NoError(t, err)
	return client
}

// commitOnHead commits one file on the branch's current head.
func commitOnHead(t *testing.T, client forges.Forge, path string) {
	t.Helper()
	ctx := context.Background()
	head, err := client.Head(ctx, "main")
	require.NoError(t, err)
	_, err = client.Commit(ctx, commitRequest("main", head, gitfile.Change{Path: path, Content: []byte(path + "\n")}))
	require.NoError(t, err)
}

func TestGitHubAppCommitsWithAnInstallationToken(t *testing.T) {
	sim := startSim(t)
	repo := repoName(t, "r")
	require.NoError(t, sim.CreateRepo(owner, repo, map[string]string{"a.yaml": "a: 1\n"}))
	client := newAppClient(t, sim, repo, registerApp(t, sim))

	commitOnHead(t, client, "first.yaml")
	require.Equal(t, 1, sim.InstallationTokensIssued(), "the JWT was exchanged once")
	var exchanges, asInstallation int
	for _, r := range sim.Requests() {
		switch r.Credential {
		case "app":
			exchanges++
			require.Equal(t, "/app/installations/5678/access_tokens", r.Path)
		case "installation":
			asInstallation++
		}
	}
	require.Equal(t, 1, exchanges)
	require.Equal(t, 5, asInstallation, "head, the head's commit, tree, commit, ref update")

	sim.ExpireInstallationTokens()
	commitOnHead(t, client, "second.yaml")
	require.Equal(t, 2, sim.InstallationTokensIssued(), "the refused token was replaced")
	refused := 0
	for _, r := range sim.Requests() {
		if r.Status == 401 {
			refused++
		}
	}
	require.Equal(t, 1, refused, "one request met the expired token and was sent again")
	content, ok := sim.File(owner, repo, "main", "second.yaml")
	require.True(t, ok, "the commit after the expiry landed")
	require.Equal(t, "second.yaml\n", content)
}

func TestInstallationTokenIsRefreshedBeforeItExpires(t *testing.T) {
	// ghinstallation refreshes a token a minute before its expiry; with 61
	// seconds to live, the token is due for refresh after one second.
	sim := startSim(t, simgithub.WithInstallationTokenTTL(61*time.Second))
	repo := repoName(t, "r")
	require.NoError(t, sim.CreateRepo(owner, repo, map[string]string{"a.yaml": "a: 1\n"}))
	client := newAppClient(t, sim, repo, registerApp(t, sim))
	commitOnHead(t, client, "first.yaml")
	time.Sleep(1500 * time.Millisecond)
	commitOnHead(t, client, "second.yaml")
	// At least one refresh: a first commit slower than the second of grace
	// (a loaded machine) refreshes already during it. None of them may
	// have waited for a 401.
	require.GreaterOrEqual(t, sim.InstallationTokensIssued(), 2, "the token was refreshed before it expired")
	for _, r := range sim.Requests() {
		require.NotEqual(t, 401, r.Status, "no request went out with an expired token: %s %s", r.Method, r.Path)
	}
}

func TestGitHubAppWithAnotherKeyIsUnauthorized(t *testing.T) {
	sim := startSim(t)
	repo := repoName(t, "r")
	require.NoError(t, sim.CreateRepo(owner, repo, map[string]string{"a.yaml": "a: 1\n"}))
	registerApp(t, sim)
	_, otherKey := newAppKey(t)
	_, err := newAppClient(t, sim, repo, otherKey).Head(context.Background(), "main")
	require.ErrorIs(t, err, forges.ErrUnauthorized)
}

func TestNewRefusesAmbiguousOrMissingCredentials(t *testing.T) {
	_, err := forgegithub.New(forgegithub.Options{Owner: "o", Repo: "r"})
	require.Error(t, err)
	_, err = forgegithub.New(forgegithub.Options{Owner: "o", Repo: "r", Token: "t",
		App: &forgegithub.AppCredentials{AppID: 1, InstallationID: 2, PrivateKey: []byte("x")}})
	require.Error(t, err)
	_, err = forgegithub.New(forgegithub.Options{Owner: "o", Repo: "r",
		App: &forgegithub.AppCredentials{AppID: 1, InstallationID: 2, PrivateKey: []byte("not a key")}})
	require.ErrorContains(t, err, "GitHub App 1")
}
