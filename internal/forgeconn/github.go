package forgeconn

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/redact"
)

// openGitHub builds the GitHub forge: owner and repository from spec.url's
// path, the API from spec.forge.apiURL or derived from the host
// (api.github.com for github.com, {scheme}://{host}/api/v3 for GitHub
// Enterprise Server, https://docs.github.com/enterprise-server@latest/rest),
// and a GitHub App from the Secret when it holds one, else its token, else
// its password (where Flux and Argo CD Secrets keep a token for HTTPS).
//
// spec.commit.mode chooses author mode (the actor as author, the operator
// as committer) or verified mode (GitHub signs as the App; the actor goes
// into a Co-authored-by trailer).
func openGitHub(spec v1alpha3.GitProviderSpec, creds credentials.Credentials, rt http.RoundTripper, pacers *Pacers) (forges.Forge, error) {
	location, err := gitHubLocation(spec)
	if err != nil {
		return nil, err
	}
	opts := github.Options{Owner: location.owner, Repo: location.repo, APIURL: location.apiURL, WebURL: location.webURL,
		Transport: rt, Verified: spec.Commit.Mode == v1alpha3.CommitModeVerified}
	switch {
	case creds.GitHubApp != nil:
		// An App's installation tokens are short-lived and narrowly scoped:
		// preferred when the Secret also carries a token.
		opts.App = &github.AppCredentials{
			AppID: creds.GitHubApp.AppID, InstallationID: creds.GitHubApp.InstallationID, PrivateKey: creds.GitHubApp.PrivateKey,
		}
	case creds.Token != "":
		opts.Token = creds.Token
	case creds.Password != "":
		opts.Token = creds.Password
	default:
		return nil, fmt.Errorf("%w: the GitHub API needs a GitHub App (keys appID, installationID, privateKey) "+
			"or a token with contents write permission (key token) in the Secret", ErrUnusableCredentials)
	}
	opts.Pacer = pacers.forGitHub(opts)
	client, err := github.New(opts)
	if err != nil {
		if opts.App != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnusableCredentials, err)
		}
		return nil, fmt.Errorf("opening the github forge: %w", err)
	}
	return client, nil
}

type gitHubRepository struct {
	owner, repo    string
	apiURL, webURL string
}

// gitHubLocation derives the repository, the API and the web base URLs
// from the GitProvider. An SSH URL names the host too; its API and web UI
// are served over HTTPS on the default port.
func gitHubLocation(spec v1alpha3.GitProviderSpec) (gitHubRepository, error) {
	endpoint, err := parseSpecURL(spec.URL)
	if err != nil {
		return gitHubRepository{}, err
	}
	var location gitHubRepository
	switch endpoint.Protocol {
	case "http", "https":
		host := endpoint.Host
		if endpoint.Port != 0 {
			host = net.JoinHostPort(host, strconv.Itoa(endpoint.Port))
		}
		location.webURL = endpoint.Protocol + "://" + host
	case "ssh":
		location.webURL = "https://" + endpoint.Host
	default:
		return gitHubRepository{}, fmt.Errorf("spec.url %q is not a GitHub repository URL (https:// or ssh://)", redact.URL(spec.URL))
	}
	location.apiURL = location.webURL + "/api/v3"
	if strings.EqualFold(endpoint.Host, "github.com") || strings.EqualFold(endpoint.Host, "www.github.com") {
		location.webURL, location.apiURL = github.DefaultWebURL, github.DefaultAPIURL
	}
	if spec.Forge != nil && spec.Forge.APIURL != "" {
		location.apiURL = strings.TrimSuffix(spec.Forge.APIURL, "/")
	}
	path := strings.Trim(strings.TrimSuffix(strings.Trim(endpoint.Path, "/"), ".git"), "/")
	owner, repo, ok := strings.Cut(path, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return gitHubRepository{}, fmt.Errorf("spec.url %q does not name a GitHub repository as {owner}/{repository}", redact.URL(spec.URL))
	}
	location.owner, location.repo = owner, repo
	return location, nil
}
