package forgeconn

import (
	"fmt"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/credentials"
)

// tokenOnlyUsername is the basic-auth username sent with a token when the
// Secret names no username. Forges ignore the username when the password
// is a token (GitHub, Gitea and GitLab all accept any), but it must not be
// empty.
const tokenOnlyUsername = "git"

// gitAuth picks the go-git credential for a URL of the given transport
// protocol (go-git's name: https, http, ssh, file).
func gitAuth(protocol string, spec v1alpha3.GitProviderSpec, creds credentials.Credentials) (gogit.Auth, error) {
	switch protocol {
	case "http", "https":
		return httpAuth(protocol, creds)
	case "ssh":
		return sshAuth(spec, creds)
	}
	// file:// (and git://) carry no credentials; a Secret that is set anyway
	// is not an error, it simply is not needed.
	return nil, nil
}

// httpAuth is basic auth: username and password, else the token as the
// password. No credentials means anonymous access, which a public mirror
// target might allow; the probe says if it does not.
func httpAuth(protocol string, creds credentials.Credentials) (gogit.Auth, error) {
	switch {
	case creds.Password != "":
		return gogit.BasicAuth{Username: creds.Username, Password: creds.Password}, nil
	case creds.Token != "":
		username := creds.Username
		if username == "" {
			username = tokenOnlyUsername
		}
		return gogit.BasicAuth{Username: username, Password: creds.Token}, nil
	case creds.GitHubApp != nil:
		return nil, fmt.Errorf("%w: the Secret holds a GitHub App, which commits through the GitHub API; "+
			"set spec.forge.type: github, or put a token in the Secret (key token) to push with the Git protocol", ErrUnusableCredentials)
	case len(creds.SSHPrivateKey) > 0:
		return nil, fmt.Errorf("%w: the Secret holds an SSH key but spec.url is an %s URL; "+
			"use the repository's ssh:// URL, or put a token or username and password in the Secret", ErrUnusableCredentials, protocol)
	}
	return nil, nil
}

// sshAuth is the private key with the known_hosts its server must be in.
// Host keys are never accepted unseen, so known_hosts is required.
func sshAuth(spec v1alpha3.GitProviderSpec, creds credentials.Credentials) (gogit.Auth, error) {
	if len(creds.SSHPrivateKey) == 0 {
		if spec.SecretRef == nil {
			return nil, fmt.Errorf("%w: spec.url is an SSH URL but spec.secretRef is not set; "+
				"reference a Secret holding an SSH private key (key ssh-privatekey, identity or sshPrivateKey)", ErrUnusableCredentials)
		}
		return nil, fmt.Errorf("%w: spec.url is an SSH URL but Secret %q holds no SSH private key "+
			"(key ssh-privatekey, identity or sshPrivateKey)", ErrUnusableCredentials, spec.SecretRef.Name)
	}
	if len(creds.KnownHosts) == 0 {
		return nil, fmt.Errorf("%w: SSH needs the server's host key to verify it, and none was given; "+
			"set spec.knownHostsRef to a Secret or ConfigMap with known_hosts, or add a known_hosts key to the credentials Secret",
			ErrUnusableCredentials)
	}
	return gogit.SSHKey{PEM: creds.SSHPrivateKey, Passphrase: creds.SSHPassphrase, KnownHosts: creds.KnownHosts}, nil
}
