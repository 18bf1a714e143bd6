package gogit

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/test/harness"
)

func TestWrongHTTPPasswordIsUnauthorized(t *testing.T) {
	t.Parallel()
	repo, head := createRepo(t, map[string]string{"a.yaml": "a\n"})
	client, err := New(Options{URL: shared.HTTPURL(repo), Auth: BasicAuth{Username: testHTTPUser, Password: "wrong"}})
	require.NoError(t, err)
	ctx := testContext(t)

	errs := map[string]error{"probe": client.Probe(ctx)}
	_, errs["head"] = client.Head(ctx, "main")
	_, errs["tree"] = client.Tree(ctx, head, "")
	_, errs["commit"] = client.Commit(ctx, commitRequest("main", head, "x", put("b.yaml", "b\n")))
	for op, err := range errs {
		require.ErrorIs(t, err, forges.ErrUnauthorized, op)
		// The server's answer is "authentication required" too: said once.
		require.Equal(t, 1, strings.Count(err.Error(), "authentication required"), "%s: %v", op, err)
	}
	require.Equal(t, head, serverGit(t, repo, "rev-parse", "main"))
}

func TestUnknownSSHKeyIsUnauthorized(t *testing.T) {
	t.Parallel()
	repo, _ := createRepo(t, map[string]string{"a.yaml": "a\n"})
	strangerKey, _, err := harness.GenerateSSHKeyPair()
	require.NoError(t, err)
	client, err := New(Options{URL: shared.SSHURL(repo), Auth: SSHKey{PEM: strangerKey, KnownHosts: []byte(shared.KnownHosts())}})
	require.NoError(t, err)

	err = client.Probe(testContext(t))
	require.ErrorIs(t, err, forges.ErrUnauthorized)
	require.Contains(t, err.Error(), "unable to authenticate")
}

func TestSSHHostKeyMismatchNamesKnownHosts(t *testing.T) {
	t.Parallel()
	repo, _ := createRepo(t, map[string]string{"a.yaml": "a\n"})
	_, otherHostKey, err := harness.GenerateSSHKeyPair()
	require.NoError(t, err)
	address := sshAddress(t, shared.SSHURL(repo))
	wrongKnownHosts := knownhosts.Line([]string{knownhosts.Normalize(address)}, otherHostKey)
	client, err := New(Options{URL: shared.SSHURL(repo), Auth: SSHKey{PEM: shared.sshKey, KnownHosts: []byte(wrongKnownHosts)}})
	require.NoError(t, err)

	err = client.Probe(testContext(t))
	require.ErrorIs(t, err, forges.ErrForbidden)
	var mismatch *hostKeyError
	require.ErrorAs(t, err, &mismatch)
	require.Contains(t, err.Error(), "SSH host key mismatch for "+knownhosts.Normalize(address))
	require.Contains(t, err.Error(), "known_hosts lists ssh-ed25519 SHA256:")
}

func TestSSHNeedsKnownHostsNamingTheServer(t *testing.T) {
	t.Parallel()
	url := shared.SSHURL("any")
	_, err := New(Options{URL: url, Auth: SSHKey{PEM: shared.sshKey}})
	require.ErrorContains(t, err, "no known_hosts")

	elsewhere := strings.Replace(shared.KnownHosts(), "127.0.0.1", "192.0.2.1", 1)
	_, err = New(Options{URL: url, Auth: SSHKey{PEM: shared.sshKey, KnownHosts: []byte(elsewhere)}})
	require.ErrorContains(t, err, "known_hosts lists no host key for 127.0.0.1:")

	_, err = New(Options{URL: url, Auth: SSHKey{PEM: shared.sshKey, KnownHosts: []byte("not a known_hosts line\n")}})
	require.ErrorContains(t, err, "known_hosts")

	_, err = New(Options{URL: url, Auth: SSHKey{PEM: []byte("garbage"), KnownHosts: []byte(shared.KnownHosts())}})
	require.ErrorContains(t, err, "parsing SSH private key")
}

func TestNewRefusesCredentialsThatDoNotFitTheURL(t *testing.T) {
	t.Parallel()
	sshKey := SSHKey{PEM: shared.sshKey, KnownHosts: []byte(shared.KnownHosts())}
	for name, opts := range map[string]Options{
		"password over ssh":  {URL: shared.SSHURL("r"), Auth: BasicAuth{Username: "u", Password: "p"}},
		"no key over ssh":    {URL: shared.SSHURL("r")},
		"key over https":     {URL: shared.HTTPURL("r"), Auth: sshKey},
		"password for file":  {URL: shared.FileURL("r"), Auth: BasicAuth{Username: "u", Password: "p"}},
		"empty URL":          {},
		"unsupported scheme": {URL: "ftp://example.com/r.git"},
	} {
		_, err := New(opts)
		require.Error(t, err, name)
	}
	_, err := New(Options{URL: shared.HTTPURL("r"), Auth: &BasicAuth{Username: "u", Password: "p"}})
	require.NoError(t, err, "credentials by pointer are accepted")
}

func TestMissingRepositoryIsNotFound(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		client := newClient(t, r, "does-not-exist")
		ctx := testContext(t)
		require.ErrorIs(t, client.Probe(ctx), forges.ErrNotFound)
		_, err := client.Head(ctx, "main")
		require.ErrorIs(t, err, forges.ErrNotFound)
	})
}

func TestHeadOfMissingBranchIsNotFound(t *testing.T) {
	t.Parallel()
	forEachRemote(t, func(t *testing.T, r remote) {
		repo, head := createRepo(t, map[string]string{"a.yaml": "a\n"})
		client := newClient(t, r, repo)
		ctx := testContext(t)
		require.NoError(t, client.Probe(ctx))
		got, err := client.Head(ctx, "main")
		require.NoError(t, err)
		require.Equal(t, head, got)
		_, err = client.Head(ctx, "no-such-branch")
		require.ErrorIs(t, err, forges.ErrNotFound)
		require.Equal(t, "", client.CommitURL(head), "a plain remote has no web UI")
	})
}

// sshAddress is the host:port of an ssh:// URL.
func sshAddress(t *testing.T, rawURL string) string {
	t.Helper()
	parsed, err := url.Parse(rawURL)
	require.NoError(t, err)
	return parsed.Host
}
