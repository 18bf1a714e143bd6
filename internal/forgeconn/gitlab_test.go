package forgeconn_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
	simgitlab "github.com/configbutler/gitops-reverser/test/sim/gitlab"
)

// TestOpenGitLabReachesTheProject opens the gitlab forge from a
// GitProvider the way a user writes one, with the token under either key
// a Secret may use, and probes the simulator.
func TestOpenGitLabReachesTheProject(t *testing.T) {
	server := simgitlab.Start()
	t.Cleanup(server.Close)
	server.AddToken("glpat-ok", simgitlab.User{Username: "bot", Name: "Bot", Email: "bot@example.com"})
	_, err := server.CreateProject("group/sub/repo", map[string]string{"a.yaml": "a\n"})
	require.NoError(t, err)
	gitlabType := &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitLab}
	tests := []struct {
		name  string
		spec  v1alpha3.GitProviderSpec
		creds credentials.Credentials
		probe func(error) bool
	}{
		{"token", v1alpha3.GitProviderSpec{URL: server.URL() + "/group/sub/repo.git", Forge: gitlabType},
			credentials.Credentials{Token: "glpat-ok"}, isNil},
		{"token as password", v1alpha3.GitProviderSpec{URL: server.URL() + "/group/sub/repo", Forge: gitlabType},
			credentials.Credentials{Username: "oauth2", Password: "glpat-ok"}, isNil},
		{"explicit api url", v1alpha3.GitProviderSpec{URL: "https://gitlab.invalid/group/sub/repo.git",
			Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitLab, APIURL: server.APIURL()}},
			credentials.Credentials{Token: "glpat-ok"}, isNil},
		{"refused token", v1alpha3.GitProviderSpec{URL: server.URL() + "/group/sub/repo.git", Forge: gitlabType},
			credentials.Credentials{Token: "glpat-wrong"}, isUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireProbe(t, context.Background(), tt.spec, tt.creds, tt.probe)
		})
	}
}

func TestOpenGitLabDerivesTheAPIAndProject(t *testing.T) {
	tests := []struct {
		spec      v1alpha3.GitProviderSpec
		commitURL string
	}{
		{v1alpha3.GitProviderSpec{URL: "https://gitlab.com/group/repo.git"}, "https://gitlab.com/group/repo/-/commit/abc"},
		{v1alpha3.GitProviderSpec{URL: "https://gitlab.example.com:8443/a/b/c"}, "https://gitlab.example.com:8443/a/b/c/-/commit/abc"},
		{v1alpha3.GitProviderSpec{URL: "git@gitlab.example.com:group/repo.git", Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitLab}},
			"https://gitlab.example.com/group/repo/-/commit/abc"},
		{v1alpha3.GitProviderSpec{URL: "https://example.com/gitlab/group/repo.git",
			Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitLab, APIURL: "https://example.com/gitlab/api/v4"}},
			"https://example.com/gitlab/group/repo/-/commit/abc"},
	}
	for _, tt := range tests {
		t.Run(tt.spec.URL, func(t *testing.T) {
			requireCommitURL(t, tt.spec, tt.commitURL)
		})
	}
}

func TestOpenGitLabNeedsAToken(t *testing.T) {
	_, err := forgeconn.Open(v1alpha3.GitProviderSpec{URL: "https://gitlab.com/group/repo.git"},
		credentials.Credentials{SSHPrivateKey: []byte("key")}, nil)
	require.ErrorIs(t, err, forgeconn.ErrUnusableCredentials)
	require.ErrorContains(t, err, "access token with the api scope")
}
