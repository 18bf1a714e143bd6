package forgeconn

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gitlab"
	"github.com/configbutler/gitops-reverser/internal/credentials"
	"github.com/configbutler/gitops-reverser/internal/redact"
)

// openGitLab builds the GitLab forge: the project is spec.url's path
// without .git, the API is spec.forge.apiURL or {scheme}://{host}/api/v4,
// and the token is the Secret's token, else its password (where Flux and
// Argo CD Secrets keep a GitLab token for HTTPS).
func openGitLab(spec v1alpha3.GitProviderSpec, creds credentials.Credentials, rt http.RoundTripper) (forges.Forge, error) {
	token := creds.Token
	if token == "" {
		token = creds.Password
	}
	if token == "" {
		return nil, fmt.Errorf("%w: the GitLab API needs an access token with the api scope; "+
			"put it in the Secret under the key token (or password)", ErrUnusableCredentials)
	}
	apiURL, project, err := gitLabLocation(spec)
	if err != nil {
		return nil, err
	}
	client, err := gitlab.New(gitlab.Options{APIURL: apiURL, Project: project, Token: token, HTTPClient: httpClient(rt)})
	if err != nil {
		return nil, fmt.Errorf("opening the gitlab forge: %w", err)
	}
	return client, nil
}

// gitLabLocation derives the API base URL and the project path from the
// GitProvider. An SSH URL names the host too; its API is served over HTTPS
// on the default port (the SSH port is not the web port).
func gitLabLocation(spec v1alpha3.GitProviderSpec) (apiURL, project string, err error) {
	endpoint, err := parseSpecURL(spec.URL)
	if err != nil {
		return "", "", err
	}
	project = strings.Trim(strings.TrimSuffix(strings.Trim(endpoint.Path, "/"), ".git"), "/")
	switch endpoint.Protocol {
	case "http", "https":
		host := endpoint.Host
		if endpoint.Port != 0 {
			host = net.JoinHostPort(host, strconv.Itoa(endpoint.Port))
		}
		apiURL = endpoint.Protocol + "://" + host + "/api/v4"
	case "ssh":
		apiURL = "https://" + endpoint.Host + "/api/v4"
	default:
		return "", "", fmt.Errorf("spec.url %q is not a GitLab repository URL (https:// or ssh://)", redact.URL(spec.URL))
	}
	if spec.Forge != nil && spec.Forge.APIURL != "" {
		apiURL = strings.TrimSuffix(spec.Forge.APIURL, "/")
		// A GitLab served below a relative URL root (https://host/gitlab)
		// has the root in both URLs; the project path starts after it.
		if u, parseErr := url.Parse(apiURL); parseErr == nil {
			if root := strings.Trim(strings.TrimSuffix(u.Path, "/api/v4"), "/"); root != "" {
				project = strings.TrimPrefix(project, root+"/")
			}
		}
	}
	if project == "" {
		return "", "", fmt.Errorf("spec.url %q names no GitLab project", redact.URL(spec.URL))
	}
	return apiURL, project, nil
}
