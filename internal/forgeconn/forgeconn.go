// Package forgeconn opens the forge a GitProvider describes: it decides the
// forge type, turns the provider's credentials into that forge's auth, and
// builds the client. It is the one place that knows which forges exist.
package forgeconn

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gitea"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/redact"
)

// ErrForgeNotSupported matches an error saying spec.forge.type names no
// forge this operator knows.
var ErrForgeNotSupported = errors.New("forge not supported")

// ErrUnusableCredentials matches an error saying the credentials cannot
// authenticate to the provider's URL: an SSH URL without a key or without
// known_hosts, a key that does not parse, credentials of the wrong kind for
// the transport. The message says what to add or change.
var ErrUnusableCredentials = errors.New("credentials cannot be used for this repository")

// ForgeType is the forge a GitProvider writes through: spec.forge.type when
// set, otherwise inferred from spec.url by these rules, in order:
//
//   - ssh:// and scp-like user@host:path URLs → git (SSH speaks only the Git
//     protocol, whatever the host);
//   - host github.com → github;
//   - a host name containing "gitlab" → gitlab;
//   - a host name containing "gitea" → gitea;
//   - anything else (other https/http hosts, file://, a URL that does not
//     parse) → git.
//
// Self-hosted forges on other host names (GitHub Enterprise Server, a Gitea
// at git.example.com) cannot be told apart from a plain Git server by their
// URL; they need spec.forge.type.
func ForgeType(spec v1alpha3.GitProviderSpec) v1alpha3.ForgeType {
	if spec.Forge != nil && spec.Forge.Type != "" {
		return spec.Forge.Type
	}
	endpoint, err := transport.NewEndpoint(spec.URL)
	if err != nil || endpoint.Protocol != "http" && endpoint.Protocol != "https" {
		return v1alpha3.ForgeGit
	}
	host := strings.ToLower(endpoint.Host)
	switch {
	case host == "github.com":
		return v1alpha3.ForgeGitHub
	case strings.Contains(host, "gitlab"):
		return v1alpha3.ForgeGitLab
	case strings.Contains(host, "gitea"):
		return v1alpha3.ForgeGitea
	}
	return v1alpha3.ForgeGit
}

// Open builds the forge client for spec with creds. It checks what can be
// checked without the network (the credentials fit the URL's transport,
// known_hosts is present for SSH) but does not contact the remote; probe
// it with forges.Prober.
//
// rt, when set, carries the API forges' HTTP requests (metrics wrap
// it); nil is the default. The git forge speaks the Git protocol through
// go-git and does not use it.
func Open(spec v1alpha3.GitProviderSpec, creds credentials.Credentials, rt http.RoundTripper) (forges.Forge, error) {
	return open(spec, creds, rt, nil)
}

func open(spec v1alpha3.GitProviderSpec, creds credentials.Credentials, rt http.RoundTripper, pacers *Pacers) (forges.Forge, error) {
	forgeType := ForgeType(spec)
	switch forgeType {
	case v1alpha3.ForgeGit:
		return openGit(spec, creds)
	case v1alpha3.ForgeGitLab:
		return openGitLab(spec, creds, rt)
	case v1alpha3.ForgeGitHub:
		return openGitHub(spec, creds, rt, pacers)
	case v1alpha3.ForgeGitea:
		return openGitea(spec, creds, rt)
	}
	return nil, fmt.Errorf("%w: unknown forge type %q (spec.forge.type takes github, gitea, gitlab or git)", ErrForgeNotSupported, forgeType)
}

// openGitea builds the Gitea API forge. The repository is the last two
// segments of spec.url's path (Gitea repositories are always owner/name);
// what precedes them is the path Gitea is served below. The API is at
// spec.forge.apiURL (with or without /api/v1), else at that root on
// spec.url's host; for an SSH URL, https on the default port, as the SSH
// port is not the web port. The token is the Secret's token, else its
// password, where Flux and Argo CD Secrets keep a Gitea token for HTTPS.
func openGitea(spec v1alpha3.GitProviderSpec, creds credentials.Credentials, rt http.RoundTripper) (forges.Forge, error) {
	token := creds.Token
	if token == "" {
		token = creds.Password
	}
	if token == "" {
		return nil, fmt.Errorf("%w: the Gitea API needs an access token with the write:repository scope; "+
			"put it in the Secret under the key token (or password)", ErrUnusableCredentials)
	}
	endpoint, err := parseSpecURL(spec.URL)
	if err != nil {
		return nil, err
	}
	segments := strings.Split(strings.Trim(strings.TrimSuffix(strings.Trim(endpoint.Path, "/"), ".git"), "/"), "/")
	if len(segments) < 2 {
		return nil, fmt.Errorf("spec.url %q names no Gitea repository (owner/name)", redact.URL(spec.URL))
	}
	owner, repo := segments[len(segments)-2], segments[len(segments)-1]
	var baseURL string
	switch endpoint.Protocol {
	case "http", "https":
		host := endpoint.Host
		if endpoint.Port != 0 {
			host = net.JoinHostPort(host, strconv.Itoa(endpoint.Port))
		}
		baseURL = strings.TrimSuffix(endpoint.Protocol+"://"+host+"/"+strings.Join(segments[:len(segments)-2], "/"), "/")
	case "ssh":
		baseURL = "https://" + endpoint.Host
	default:
		return nil, fmt.Errorf("spec.url %q is not a Gitea repository URL (https:// or ssh://)", redact.URL(spec.URL))
	}
	if spec.Forge != nil && spec.Forge.APIURL != "" {
		baseURL = spec.Forge.APIURL
	}
	opts := gitea.Options{BaseURL: baseURL, Owner: owner, Repo: repo, Token: token, HTTPClient: httpClient(rt)}
	if opts.Pusher, err = giteaPusher(opts, creds.Username); err != nil {
		return nil, fmt.Errorf("opening the gitea forge: %w", err)
	}
	client, err := gitea.New(opts)
	if err != nil {
		return nil, fmt.Errorf("opening the gitea forge: %w", err)
	}
	return client, nil
}

// giteaPusher is the git forge on the repository's smart-HTTP URL with the
// API token as the basic-auth password, through which the Gitea forge
// pushes its large commits.
func giteaPusher(opts gitea.Options, username string) (gitea.Pusher, error) {
	cloneURL, err := gitea.CloneURL(opts)
	if err != nil {
		return nil, err
	}
	if username == "" {
		username = tokenOnlyUsername
	}
	return gogit.New(gogit.Options{URL: cloneURL, Auth: gogit.BasicAuth{Username: username, Password: opts.Token}})
}

// httpClient is a client over rt, nil for the forge's default.
func httpClient(rt http.RoundTripper) *http.Client {
	if rt == nil {
		return nil
	}
	return &http.Client{Transport: rt, Timeout: 2 * time.Minute}
}

// openGit builds the go-git forge.
func openGit(spec v1alpha3.GitProviderSpec, creds credentials.Credentials) (forges.Forge, error) {
	endpoint, err := parseSpecURL(spec.URL)
	if err != nil {
		return nil, err
	}
	auth, err := gitAuth(endpoint.Protocol, spec, creds)
	if err != nil {
		return nil, err
	}
	client, err := gogit.New(gogit.Options{URL: spec.URL, Auth: auth})
	if err != nil {
		if auth != nil {
			// The URL parsed above, so what the client refused is the
			// credentials: a key that does not parse, known_hosts without
			// this server.
			return nil, fmt.Errorf("%w: %w", ErrUnusableCredentials, err)
		}
		return nil, fmt.Errorf("opening the git forge: %w", err)
	}
	return client, nil
}
