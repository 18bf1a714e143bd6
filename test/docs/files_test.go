package docs

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strconv"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// userFiles are the files the quickstarts have the user create or
// download, by the name the pages give them, with real content of the
// right kind: a GitHub App's RSA key, an SSH deploy key, and known_hosts
// naming the GitProvider's host.
func userFiles(t *testing.T, provider v1alpha3.GitProvider) map[string]string {
	t.Helper()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	appKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})

	public, private, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	deployKey, err := ssh.MarshalPrivateKey(private, "gitops-reverser")
	require.NoError(t, err)
	sshPublic, err := ssh.NewPublicKey(public)
	require.NoError(t, err)

	return map[string]string{
		"app.private-key.pem": string(appKey),
		"deploy_key":          string(pem.EncodeToMemory(deployKey)),
		"known_hosts":         knownHostsHost(t, provider.Spec.URL) + " " + string(ssh.MarshalAuthorizedKey(sshPublic)),
	}
}

// knownHostsHost is how ssh-keyscan names the URL's host: host, or
// [host]:port off port 22.
func knownHostsHost(t *testing.T, url string) string {
	t.Helper()
	endpoint, err := transport.NewEndpoint(url)
	require.NoError(t, err)
	if endpoint.Port == 0 || endpoint.Port == 22 {
		return endpoint.Host
	}
	return "[" + endpoint.Host + "]:" + strconv.Itoa(endpoint.Port)
}
