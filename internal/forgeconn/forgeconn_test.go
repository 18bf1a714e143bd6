package forgeconn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gitea"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/forgeconn"
	"github.com/configbutler/gitops-reverser/test/harness"
)

func TestForgeTypeInference(t *testing.T) {
	tests := []struct {
		url  string
		want v1alpha3.ForgeType
	}{
		{"https://github.com/org/repo.git", v1alpha3.ForgeGitHub},
		{"https://GitHub.com/org/repo", v1alpha3.ForgeGitHub},
		{"http://github.com:80/org/repo", v1alpha3.ForgeGitHub},
		{"ssh://git@github.com/org/repo.git", v1alpha3.ForgeGit},
		{"git@github.com:org/repo.git", v1alpha3.ForgeGit},
		{"https://gitlab.com/group/sub/repo.git", v1alpha3.ForgeGitLab},
		{"https://gitlab.example.com/group/repo.git", v1alpha3.ForgeGitLab},
		{"git@gitlab.com:group/repo.git", v1alpha3.ForgeGit},
		{"https://gitea.example.com/org/repo.git", v1alpha3.ForgeGitea},
		{"http://my-gitea:3000/org/repo.git", v1alpha3.ForgeGitea},
		{"https://git.example.com/org/repo.git", v1alpha3.ForgeGit},
		{"https://github.example.com/org/repo.git", v1alpha3.ForgeGit},
		{"https://dev.azure.com/org/project/_git/repo", v1alpha3.ForgeGit},
		{"file:///srv/git/repo.git", v1alpha3.ForgeGit},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			require.Equal(t, tt.want, forgeconn.ForgeType(v1alpha3.GitProviderSpec{URL: tt.url}))
		})
	}
}

func TestForgeTypeFromSpecWins(t *testing.T) {
	spec := v1alpha3.GitProviderSpec{
		URL:   "https://github.com/org/repo.git",
		Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
	}
	require.Equal(t, v1alpha3.ForgeGit, forgeconn.ForgeType(spec))
	spec = v1alpha3.GitProviderSpec{
		URL:   "https://code.example.com/org/repo.git",
		Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea, APIURL: "https://code.example.com"},
	}
	require.Equal(t, v1alpha3.ForgeGitea, forgeconn.ForgeType(spec))
}

// TestOpenGiteaDerivesTheBaseURLAndRepository checks, through the commit
// URL, where the Gitea forge points: the web root (scheme, host, port and
// the path Gitea is served below) and owner/repo.
func TestOpenGiteaDerivesTheBaseURLAndRepository(t *testing.T) {
	giteaType := &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea}
	tests := []struct {
		name  string
		spec  v1alpha3.GitProviderSpec
		creds credentials.Credentials
		want  string
	}{
		{"inferred from the host", v1alpha3.GitProviderSpec{URL: "https://gitea.example.com/org/repo.git"},
			credentials.Credentials{Token: "tok"}, "https://gitea.example.com/org/repo/commit/abc"},
		{"port and no .git", v1alpha3.GitProviderSpec{URL: "http://my-gitea:3000/org/repo"},
			credentials.Credentials{Password: "tok"}, "http://my-gitea:3000/org/repo/commit/abc"},
		{"served below a path", v1alpha3.GitProviderSpec{URL: "https://code.example.com/gitea/org/repo.git", Forge: giteaType},
			credentials.Credentials{Token: "tok"}, "https://code.example.com/gitea/org/repo/commit/abc"},
		{"api URL wins", v1alpha3.GitProviderSpec{URL: "https://code.example.com/org/repo.git",
			Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea, APIURL: "https://gitea.internal:8443/api/v1"}},
			credentials.Credentials{Username: "bot", Password: "tok"}, "https://gitea.internal:8443/org/repo/commit/abc"},
		{"ssh URL", v1alpha3.GitProviderSpec{URL: "ssh://git@gitea.example.com:2222/org/repo.git", Forge: giteaType},
			credentials.Credentials{Token: "tok"}, "https://gitea.example.com/org/repo/commit/abc"},
		{"scp-like URL", v1alpha3.GitProviderSpec{URL: "git@gitea.example.com:org/repo.git", Forge: giteaType},
			credentials.Credentials{Token: "tok"}, "https://gitea.example.com/org/repo/commit/abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forge, err := forgeconn.Open(tt.spec, tt.creds, nil)
			require.NoError(t, err)
			require.IsType(t, &gitea.Client{}, forge)
			require.Implements(t, (*forges.Prober)(nil), forge)
			require.Equal(t, tt.want, forge.CommitURL("abc"))
		})
	}
}

func TestOpenGiteaRefusesWhatCannotWork(t *testing.T) {
	keyPEM, _, err := harness.GenerateSSHKeyPair()
	require.NoError(t, err)
	giteaType := &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea}
	tests := []struct {
		name    string
		spec    v1alpha3.GitProviderSpec
		creds   credentials.Credentials
		wantErr error
		message string
	}{
		{"no token", v1alpha3.GitProviderSpec{URL: "https://gitea.example.com/org/repo.git"},
			credentials.Credentials{}, forgeconn.ErrUnusableCredentials, "the Gitea API needs an access token"},
		{"only an ssh key", v1alpha3.GitProviderSpec{URL: "https://gitea.example.com/org/repo.git"},
			credentials.Credentials{SSHPrivateKey: keyPEM}, forgeconn.ErrUnusableCredentials, "key token (or password)"},
		{"no owner", v1alpha3.GitProviderSpec{URL: "https://gitea.example.com/repo.git"},
			credentials.Credentials{Token: "tok"}, nil, "names no Gitea repository"},
		{"file URL", v1alpha3.GitProviderSpec{URL: "file:///srv/git/org/repo.git", Forge: giteaType},
			credentials.Credentials{Token: "tok"}, nil, "is not a Gitea repository URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := forgeconn.Open(tt.spec, tt.creds, nil)
			require.Error(t, err)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			require.ErrorContains(t, err, tt.message)
		})
	}
}

// TestOpenGiteaReachesARealServer opens the Gitea forge for a repository on
// a real Gitea and probes it with the token as token, as password, and
// with a token Gitea does not know.
func TestOpenGiteaReachesARealServer(t *testing.T) {
	server, err := harness.StartGitea(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	repo, err := server.CreateRepo("mirror", true)
	require.NoError(t, err)
	spec := v1alpha3.GitProviderSpec{
		URL:   server.HTTPCloneURL(server.AdminUser(), repo.Name),
		Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea},
	}
	tests := []struct {
		name  string
		creds credentials.Credentials
		probe func(error) bool
	}{
		{"token", credentials.Credentials{Token: server.Token()}, isNil},
		{"token as password", credentials.Credentials{Username: server.AdminUser(), Password: server.Token()}, isNil},
		{"unknown token", credentials.Credentials{Token: "not-a-gitea-token"}, isUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			requireProbe(t, ctx, spec, tt.creds, tt.probe)
		})
	}
}

func TestOpenRefusesCredentialsThatCannotWork(t *testing.T) {
	keyPEM, _, err := harness.GenerateSSHKeyPair()
	require.NoError(t, err)
	sshURL := "ssh://git@127.0.0.1:2222/repo.git"
	secretRef := &v1alpha3.LocalObjectReference{Name: "git-creds"}
	tests := []struct {
		name    string
		spec    v1alpha3.GitProviderSpec
		creds   credentials.Credentials
		message string
	}{
		{"ssh without known_hosts", v1alpha3.GitProviderSpec{URL: sshURL, SecretRef: secretRef},
			credentials.Credentials{SSHPrivateKey: keyPEM}, "set spec.knownHostsRef"},
		{"ssh without a key", v1alpha3.GitProviderSpec{URL: sshURL, SecretRef: secretRef},
			credentials.Credentials{Username: "u", Password: "p"}, `Secret "git-creds" holds no SSH private key`},
		{"ssh without a secret", v1alpha3.GitProviderSpec{URL: "git@127.0.0.1:repo.git"},
			credentials.Credentials{}, "spec.secretRef is not set"},
		{"ssh with known_hosts for another host", v1alpha3.GitProviderSpec{URL: sshURL, SecretRef: secretRef},
			credentials.Credentials{SSHPrivateKey: keyPEM, KnownHosts: []byte("other.example.com " + testHostKey(t))}, "known_hosts lists no host key for 127.0.0.1:2222"},
		{"ssh with a broken key", v1alpha3.GitProviderSpec{URL: sshURL, SecretRef: secretRef},
			credentials.Credentials{SSHPrivateKey: []byte("not a key"), KnownHosts: []byte("[127.0.0.1]:2222 " + testHostKey(t))}, "parsing SSH private key"},
		{"https with only an ssh key", v1alpha3.GitProviderSpec{URL: "https://git.example.com/repo.git", SecretRef: secretRef},
			credentials.Credentials{SSHPrivateKey: keyPEM}, "use the repository's ssh:// URL"},
		{"https with only a github app", v1alpha3.GitProviderSpec{URL: "https://github.com/org/repo.git", SecretRef: secretRef, Forge: &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit}},
			credentials.Credentials{GitHubApp: &credentials.GitHubApp{AppID: 1, InstallationID: 2, PrivateKey: []byte("PEM")}}, "put a token in the Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := forgeconn.Open(tt.spec, tt.creds, nil)
			require.ErrorIs(t, err, forgeconn.ErrUnusableCredentials)
			require.ErrorContains(t, err, tt.message)
		})
	}
}

func testHostKey(t *testing.T) string {
	t.Helper()
	_, public, err := harness.GenerateSSHKeyPair()
	require.NoError(t, err)
	return string(ssh.MarshalAuthorizedKey(public))
}

// TestOpenedForgesReachARealServer probes a real git server through every
// credential shape Open builds: a token with no username, username and
// password, an SSH key, and file:// with a Secret that is not needed.
func TestOpenedForgesReachARealServer(t *testing.T) {
	keyPEM, publicKey, err := harness.GenerateSSHKeyPair()
	require.NoError(t, err)
	server, err := harness.StartGitServer(t.TempDir(), harness.GitServerOptions{
		HTTPUsername: "git", HTTPPassword: "token-value", AuthorizedKeys: []ssh.PublicKey{publicKey},
	})
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	_, err = server.CreateBareRepo("repo")
	require.NoError(t, err)
	secretRef := &v1alpha3.LocalObjectReference{Name: "git-creds"}
	tests := []struct {
		name  string
		url   string
		creds credentials.Credentials
		probe func(error) bool
	}{
		{"token only", server.HTTPURL("repo"), credentials.Credentials{Token: "token-value"}, isNil},
		{"username and password", server.HTTPURL("repo"), credentials.Credentials{Username: "git", Password: "token-value"}, isNil},
		{"wrong password", server.HTTPURL("repo"), credentials.Credentials{Username: "git", Password: "wrong"}, isUnauthorized},
		{"anonymous", server.HTTPURL("repo"), credentials.Credentials{}, isUnauthorized},
		{"ssh key", server.SSHURL("repo"), credentials.Credentials{SSHPrivateKey: keyPEM, KnownHosts: []byte(server.KnownHosts())}, isNil},
		{"file", server.FileURL("repo"), credentials.Credentials{Token: "unused"}, isNil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forge, err := forgeconn.Open(v1alpha3.GitProviderSpec{URL: tt.url, SecretRef: secretRef}, tt.creds, nil)
			require.NoError(t, err)
			prober, ok := forge.(forges.Prober)
			require.True(t, ok, "the git forge can be probed")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = prober.Probe(ctx)
			require.True(t, tt.probe(err), "probe answered %v", err)
		})
	}
}

func isNil(err error) bool          { return err == nil }
func isUnauthorized(err error) bool { return errors.Is(err, forges.ErrUnauthorized) }

// requireProbe opens the forge for spec with creds and checks what its
// probe answers.
func requireProbe(t *testing.T, ctx context.Context, spec v1alpha3.GitProviderSpec, creds credentials.Credentials, probe func(error) bool) {
	t.Helper()
	forge, err := forgeconn.Open(spec, creds, nil)
	require.NoError(t, err)
	err = forge.(forges.Prober).Probe(ctx)
	require.True(t, probe(err), "probe answered %v", err)
}

// requireCommitURL opens the forge for spec with a token and checks the
// URL it gives commit abc.
func requireCommitURL(t *testing.T, spec v1alpha3.GitProviderSpec, want string) {
	t.Helper()
	forge, err := forgeconn.Open(spec, credentials.Credentials{Token: "t"}, nil)
	require.NoError(t, err)
	require.Equal(t, want, forge.CommitURL("abc"))
}
