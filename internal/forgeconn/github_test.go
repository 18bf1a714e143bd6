package forgeconn_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

// TestOpenGitHubReachesTheRepository opens the github forge from a
// GitProvider the way a user writes one (github.com URL, API at
// spec.forge.apiURL: here the simulator) with every credential shape, and
// probes it.
func TestOpenGitHubReachesTheRepository(t *testing.T) {
	server := simgithub.Start()
	t.Cleanup(server.Close)
	server.AddToken("ghp_ok")
	require.NoError(t, server.CreateRepo("org", "repo", map[string]string{"a.yaml": "a\n"}))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	server.RegisterApp(11, 22, &key.PublicKey)
	app := &credentials.GitHubApp{AppID: 11, InstallationID: 22,
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})}
	spec := v1alpha3.GitProviderSpec{URL: "https://github.com/org/repo.git",
		Forge: &v1alpha3.ForgeSpec{APIURL: server.URL()}}
	tests := []struct {
		name  string
		creds credentials.Credentials
		probe func(error) bool
	}{
		{"token", credentials.Credentials{Token: "ghp_ok"}, isNil},
		{"token as password", credentials.Credentials{Username: "x-access-token", Password: "ghp_ok"}, isNil},
		{"github app", credentials.Credentials{GitHubApp: app}, isNil},
		{"refused token", credentials.Credentials{Token: "ghp_wrong"}, isUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireProbe(t, context.Background(), spec, tt.creds, tt.probe)
		})
	}
}

func TestOpenGitHubDerivesTheRepositoryAndWebURL(t *testing.T) {
	tests := []struct {
		spec      v1alpha3.GitProviderSpec
		commitURL string
	}{
		{v1alpha3.GitProviderSpec{URL: "https://github.com/org/repo.git"}, "https://github.com/org/repo/commit/abc"},
		{v1alpha3.GitProviderSpec{URL: "ssh://git@github.com/org/repo.git", Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitHub}},
			"https://github.com/org/repo/commit/abc"},
		{v1alpha3.GitProviderSpec{URL: "https://ghe.example.com:8443/team/app", Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitHub}},
			"https://ghe.example.com:8443/team/app/commit/abc"},
	}
	for _, tt := range tests {
		t.Run(tt.spec.URL, func(t *testing.T) {
			requireCommitURL(t, tt.spec, tt.commitURL)
		})
	}
}

func TestOpenGitHubRefusesWhatCannotWork(t *testing.T) {
	_, err := forgeconn.Open(v1alpha3.GitProviderSpec{URL: "https://github.com/org/repo.git"}, credentials.Credentials{}, nil)
	require.ErrorIs(t, err, forgeconn.ErrUnusableCredentials)
	require.ErrorContains(t, err, "GitHub App")

	badKey := credentials.Credentials{GitHubApp: &credentials.GitHubApp{AppID: 1, InstallationID: 2, PrivateKey: []byte("not a key")}}
	_, err = forgeconn.Open(v1alpha3.GitProviderSpec{URL: "https://github.com/org/repo.git"}, badKey, nil)
	require.ErrorIs(t, err, forgeconn.ErrUnusableCredentials)

	_, err = forgeconn.Open(v1alpha3.GitProviderSpec{URL: "https://github.com/org"}, credentials.Credentials{Token: "t"}, nil)
	require.ErrorContains(t, err, "{owner}/{repository}")
}
