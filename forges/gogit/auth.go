package gogit

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh"
)

// sshDialTimeout bounds the TCP connect and SSH handshake: go-git dials SSH
// with a background context, so the caller's context cannot cut a hung
// dial short.
const sshDialTimeout = 30 * time.Second

// defaultSSHUser is the user forges expect for Git over SSH.
const defaultSSHUser = "git"

// newAuthMethod turns Options.Auth into go-git's credential for the URL's
// transport, refusing combinations that cannot work (a password for SSH, a
// key for HTTPS) so a misconfiguration shows at construction.
func newAuthMethod(endpoint *transport.Endpoint, auth Auth) (transport.AuthMethod, error) {
	auth = dereferenceAuth(auth)
	switch endpoint.Protocol {
	case "http", "https":
		switch a := auth.(type) {
		case nil:
			return nil, nil
		case BasicAuth:
			return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
		default:
			return nil, fmt.Errorf("%s URLs take BasicAuth credentials, not %T", endpoint.Protocol, auth)
		}
	case "ssh":
		key, ok := auth.(SSHKey)
		if !ok {
			return nil, fmt.Errorf("ssh URLs need SSHKey credentials, got %T", auth)
		}
		return newSSHAuth(endpoint, key)
	case "file", "git":
		if auth != nil {
			return nil, fmt.Errorf("%s URLs take no credentials, got %T", endpoint.Protocol, auth)
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("unsupported transport %q", endpoint.Protocol)
	}
}

// dereferenceAuth accepts credentials by pointer as well as by value.
func dereferenceAuth(auth Auth) Auth {
	switch a := auth.(type) {
	case *BasicAuth:
		if a == nil {
			return nil
		}
		return *a
	case *SSHKey:
		if a == nil {
			return nil
		}
		return *a
	}
	return auth
}

// sshAuth is a go-git SSH credential (it implements go-git's ssh.AuthMethod)
// whose host key check uses the known_hosts from Options instead of
// ~/.ssh/known_hosts, and which offers only the host key algorithms
// known_hosts lists for the server, so the server cannot pick a key type
// that would then fail verification.
type sshAuth struct {
	user           string
	signer         ssh.Signer
	hostKeys       *knownHosts
	hostAlgorithms []string
}

func newSSHAuth(endpoint *transport.Endpoint, key SSHKey) (*sshAuth, error) {
	if len(key.KnownHosts) == 0 {
		return nil, errors.New("SSH credentials have no known_hosts: the server's host key cannot be verified")
	}
	hostKeys, err := parseKnownHosts(key.KnownHosts)
	if err != nil {
		return nil, err
	}
	host := sshHostWithPort(endpoint)
	algorithms := hostKeys.algorithmsFor(host)
	if len(algorithms) == 0 {
		return nil, fmt.Errorf("known_hosts lists no host key for %s", host)
	}
	signer, err := parseSSHPrivateKey(key.PEM, key.Passphrase)
	if err != nil {
		return nil, err
	}
	user := key.User
	if user == "" {
		user = endpoint.User
	}
	if user == "" {
		user = defaultSSHUser
	}
	return &sshAuth{user: user, signer: signer, hostKeys: hostKeys, hostAlgorithms: algorithms}, nil
}

func parseSSHPrivateKey(pemBytes []byte, passphrase string) (ssh.Signer, error) {
	if len(pemBytes) == 0 {
		return nil, errors.New("SSH private key is empty")
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if passphrase == "" {
			return nil, errors.New("SSH private key is encrypted and no passphrase was given")
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase(pemBytes, []byte(passphrase))
	}
	if err != nil {
		return nil, fmt.Errorf("parsing SSH private key: %w", err)
	}
	return signer, nil
}

// sshHostWithPort is the address go-git dials, host:port, which is also
// what the host key callback is asked about.
func sshHostWithPort(endpoint *transport.Endpoint) string {
	port := endpoint.Port
	if port <= 0 {
		port = 22
	}
	return net.JoinHostPort(endpoint.Host, strconv.Itoa(port))
}

// Name is go-git's name for public key authentication.
func (a *sshAuth) Name() string { return "ssh-public-keys" }

func (a *sshAuth) String() string {
	return fmt.Sprintf("user: %s, name: %s", a.user, a.Name())
}

// ClientConfig is called by go-git for every SSH connection.
func (a *sshAuth) ClientConfig() (*ssh.ClientConfig, error) {
	return &ssh.ClientConfig{
		User:              a.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(a.signer)},
		HostKeyCallback:   a.hostKeys.verify,
		HostKeyAlgorithms: a.hostAlgorithms,
		Timeout:           sshDialTimeout,
	}, nil
}
