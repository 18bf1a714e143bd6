package gogit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func newEd25519HostKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	public, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key, err := ssh.NewPublicKey(public)
	require.NoError(t, err)
	return key
}

func TestKnownHostsMatchesOpenSSHHostForms(t *testing.T) {
	t.Parallel()
	key := newEd25519HostKey(t)
	other := newEd25519HostKey(t)
	hashed := knownhosts.HashHostname("[git.example.com]:2222")
	data := strings.Join([]string{
		"# comment lines and blank lines are skipped",
		"",
		knownhosts.Line([]string{"github.example.com", "192.0.2.10"}, key),
		knownhosts.Line([]string{"[127.0.0.1]:2200"}, key),
		knownhosts.Line([]string{hashed}, key),
		knownhosts.Line([]string{"*.internal.example", "!secret.internal.example"}, key),
		knownhosts.Line([]string{"secret.internal.example"}, other),
		knownhosts.Line([]string{"host?.example.org"}, key),
		"@cert-authority *.example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(other))),
	}, "\n")
	hosts, err := parseKnownHosts([]byte(data))
	require.NoError(t, err)

	// The value names the key known_hosts trusts for the host, if any.
	for hostname, wantKey := range map[string]string{
		"github.example.com:22":       "key",
		"GitHub.Example.com:22":       "key",
		"192.0.2.10:22":               "key",
		"127.0.0.1:2200":              "key",
		"git.example.com:2222":        "key",
		"a.internal.example:22":       "key",
		"secret.internal.example:22":  "other",
		"host1.example.org:22":        "key",
		"host12.example.org:22":       "",
		"github.example.com:2222":     "",
		"127.0.0.1:22":                "",
		"git.example.com:22":          "",
		"unknown.example.com:22":      "",
		"deep.a.internal.example:22":  "key",
		"internal.example:22":         "",
		"[::1]:22":                    "",
		"other.internal.example:2222": "",
	} {
		err := hosts.verify(hostname, nil, key)
		if wantKey == "key" {
			require.NoError(t, err, hostname)
		} else {
			var hostErr *hostKeyError
			require.ErrorAs(t, err, &hostErr, hostname)
		}
		if wantKey == "other" {
			require.NoError(t, hosts.verify(hostname, nil, other), hostname)
		}
	}
}

func TestKnownHostsRejectsRevokedAndMismatchedKeys(t *testing.T) {
	t.Parallel()
	good := newEd25519HostKey(t)
	revoked := newEd25519HostKey(t)
	data := knownhosts.Line([]string{"git.example.com"}, good) + "\n" +
		"@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(revoked))) + "\n"
	hosts, err := parseKnownHosts([]byte(data))
	require.NoError(t, err)

	require.NoError(t, hosts.verify("git.example.com:22", nil, good))
	err = hosts.verify("git.example.com:22", nil, revoked)
	require.ErrorContains(t, err, "@revoked")
	err = hosts.verify("git.example.com:22", &net.TCPAddr{}, newEd25519HostKey(t))
	require.ErrorContains(t, err, "SSH host key mismatch for git.example.com")
	require.ErrorContains(t, err, ssh.FingerprintSHA256(good))
	err = hosts.verify("elsewhere.example.com:22", nil, good)
	require.ErrorContains(t, err, "SSH host elsewhere.example.com is not in known_hosts")
}

func TestKnownHostsOffersTheAlgorithmsOfTheListedKeys(t *testing.T) {
	t.Parallel()
	private, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaKey, err := ssh.NewPublicKey(&private.PublicKey)
	require.NoError(t, err)
	edKey := newEd25519HostKey(t)
	data := knownhosts.Line([]string{"[git.example.com]:2222"}, rsaKey) + "\n" +
		knownhosts.Line([]string{"[git.example.com]:2222"}, edKey) + "\n"
	hosts, err := parseKnownHosts([]byte(data))
	require.NoError(t, err)

	require.Equal(t, []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA, ssh.KeyAlgoED25519},
		hosts.algorithmsFor("git.example.com:2222"))
	require.Empty(t, hosts.algorithmsFor("git.example.com:22"))
}

func TestKnownHostsRefusesUnusableContent(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{
		"empty":          "",
		"only comments":  "# nothing\n\n",
		"broken key":     "host ssh-ed25519 AAAAnotbase64!!\n",
		"unknown marker": "@weird host " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(newEd25519HostKey(t)))) + "\n",
	} {
		_, err := parseKnownHosts([]byte(data))
		require.Error(t, err, name)
	}
}
