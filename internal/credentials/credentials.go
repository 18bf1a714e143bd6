// Package credentials reads the Git credentials a GitProvider references.
//
// The credentials Secret is the portable artifact across GitOps tools, so
// the reader accepts the key names of the Kubernetes built-in Secret types,
// of Flux and of Argo CD, besides the operator's own. A user can point a
// GitProvider at the Secret they already have.
//
// Key names, by what they hold (the first key present wins):
//
//	username         username                                   (all dialects)
//	password         password                                   (all dialects)
//	token            token, bearerToken (Flux)
//	SSH private key  ssh-privatekey (kubernetes.io/ssh-auth), identity (Flux),
//	                 sshPrivateKey (Argo CD)
//	SSH passphrase   passphrase; else password when the Secret holds an SSH
//	                 key (Flux reads password as the key's passphrase)
//	known_hosts      known_hosts (Flux); spec.knownHostsRef, when set, wins
//	GitHub App       appID / githubAppID, installationID /
//	                 githubAppInstallationID, privateKey / githubAppPrivateKey
//
// identity.pub (Flux) is accepted and ignored: the public key follows from
// the private one.
package credentials

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
)

// ErrSecretNotFound matches an error saying that an object holding
// credentials, or a key in it, does not exist: the credentials Secret, or
// the Secret or ConfigMap spec.knownHostsRef names. The error names the
// object (namespace/name) and the GitProvider field referencing it.
var ErrSecretNotFound = errors.New("credentials not found")

// ErrInvalidCredentials matches an error saying that the credentials exist
// but a value cannot be used (a GitHub App id that is not a number, an App
// without its private key). The error names the Secret and the key, never
// the value.
var ErrInvalidCredentials = errors.New("invalid credentials")

// DefaultKnownHostsKey is the key spec.knownHostsRef reads when it names
// none.
const DefaultKnownHostsKey = "known_hosts"

// Credentials are what a GitProvider's Secret and knownHostsRef hold, in
// the dialect-free form the forges take. Fields the Secret does not carry
// are empty.
type Credentials struct {
	// Username and Password are HTTP basic-auth credentials.
	Username string
	Password string
	// Token is an access token (a forge API token, or a password for HTTPS).
	Token string

	// SSHPrivateKey is a PEM or OpenSSH private key; SSHPassphrase decrypts
	// it when it is encrypted.
	SSHPrivateKey []byte
	SSHPassphrase string
	// KnownHosts are the known_hosts lines SSH host keys are checked against.
	KnownHosts []byte

	// GitHubApp is set when the Secret holds a GitHub App identity.
	GitHubApp *GitHubApp

	// ResourceVersion is the credentials Secret's, so a caller can tell that
	// the Secret was rotated; empty without spec.secretRef.
	ResourceVersion string
	// KnownHostsResourceVersion is that of the object spec.knownHostsRef
	// names; empty without it.
	KnownHostsResourceVersion string
}

// GitHubApp is a GitHub App installation the operator authenticates as.
type GitHubApp struct {
	AppID          int64
	InstallationID int64
	// PrivateKey is the App's PEM private key, which signs the JWT exchanged
	// for installation tokens.
	PrivateKey []byte
}

// String names which credentials are present and never their values, so
// credentials that reach a log line or an error by accident leak nothing.
func (c Credentials) String() string {
	var present []string
	if c.Username != "" {
		present = append(present, "username")
	}
	if c.Password != "" {
		present = append(present, "password")
	}
	if c.Token != "" {
		present = append(present, "token")
	}
	if len(c.SSHPrivateKey) > 0 {
		present = append(present, "ssh key")
	}
	if len(c.KnownHosts) > 0 {
		present = append(present, "known_hosts")
	}
	if c.GitHubApp != nil {
		present = append(present, fmt.Sprintf("github app %d", c.GitHubApp.AppID))
	}
	if len(present) == 0 {
		return "Credentials{none}"
	}
	return "Credentials{" + strings.Join(present, ", ") + "}"
}

// GoString redacts like String, for %#v.
func (c Credentials) GoString() string { return c.String() }

// Read returns the credentials spec references in namespace: the Secret
// spec.secretRef names and the known_hosts spec.knownHostsRef names. A spec
// with neither yields empty Credentials (anonymous access).
//
// c should read the API server directly (a manager's APIReader), so the
// operator does not keep every Secret of the cluster in its cache.
func Read(ctx context.Context, c client.Reader, namespace string, spec v1alpha3.GitProviderSpec) (Credentials, error) {
	var creds Credentials
	if spec.SecretRef != nil {
		secret, err := getSecret(ctx, c, namespace, spec.SecretRef.Name, "spec.secretRef")
		if err != nil {
			return Credentials{}, err
		}
		source := fmt.Sprintf("Secret %s/%s", namespace, secret.Name)
		if creds, err = fromSecretData(secret.Data, source); err != nil {
			return Credentials{}, err
		}
		creds.ResourceVersion = secret.ResourceVersion
	}
	if spec.KnownHostsRef != nil {
		knownHosts, version, err := readKnownHostsRef(ctx, c, namespace, *spec.KnownHostsRef)
		if err != nil {
			return Credentials{}, err
		}
		// The reference is the explicit choice in the spec, so it wins over
		// a known_hosts key the credentials Secret may also carry.
		creds.KnownHosts = knownHosts
		creds.KnownHostsResourceVersion = version
	}
	return creds, nil
}
