package forgeconn

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/configbutler/gitops-reverser/internal/redact"
)

// defaultPorts are the ports a URL means when it names none; an explicit
// default port names the same server.
var defaultPorts = map[string]int{"http": 80, "https": 443, "ssh": 22, "git": 9418}

// RepositoryKey names the repository a GitProvider URL points at, so that
// two spellings of one repository compare equal: GitTargets of different
// GitProviders (in different namespaces, too) writing the same repository
// and branch must not own overlapping paths.
//
// For network URLs the key is host[:port]/path, with
//   - the scheme and the user dropped: https://, http://, ssh:// and the
//     scp-like user@host:path reach the same repository on a forge;
//   - a default port (80, 443, 22, 9418) dropped;
//   - leading and trailing slashes and one ".git" suffix dropped, the path
//     cleaned (a/./b, a//b);
//   - the whole key lower-cased: host names are case-insensitive, and
//     GitHub, GitLab and Gitea treat owner and repository names so too. A
//     plain Git server with two repositories differing only in case is
//     taken for one; that refuses an overlap that is none (visible, and
//     fixed by another path), where the opposite would let two targets
//     delete each other's files.
//
// A file:// URL keys as file:// and its cleaned path, case kept. A URL that
// does not parse keys as itself, so only an identical spelling matches it.
// SSH on a non-default port and HTTPS on the default one (a Gitea at
// git.example.com:2222 and https://git.example.com) are different keys:
// nothing in the URLs says they are one server.
func RepositoryKey(rawURL string) string {
	trimmed := strings.TrimSpace(rawURL)
	endpoint, err := transport.NewEndpoint(trimmed)
	// go-git reads anything else as a path relative to the working
	// directory; the key must not depend on where the operator runs.
	if err != nil || endpoint.Protocol == "file" && !strings.HasPrefix(trimmed, "file://") {
		return rawURL
	}
	repoPath := strings.Trim(endpoint.Path, "/")
	repoPath = strings.Trim(strings.TrimSuffix(repoPath, ".git"), "/")
	if repoPath != "" {
		repoPath = path.Clean(repoPath)
	}
	if endpoint.Protocol == "file" {
		return "file:///" + repoPath
	}
	host := endpoint.Host
	if endpoint.Port != 0 && endpoint.Port != defaultPorts[endpoint.Protocol] {
		host += ":" + strconv.Itoa(endpoint.Port)
	}
	return strings.ToLower(host + "/" + repoPath)
}

// parseSpecURL parses spec.url. The error is text, not wrapped: net/url's
// parse error quotes the URL whole, password and all, so only a redacted
// copy of it may travel on into conditions and logs.
func parseSpecURL(raw string) (*transport.Endpoint, error) {
	endpoint, err := transport.NewEndpoint(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing spec.url %q: %s", redact.URL(raw), redact.Text(err.Error(), raw))
	}
	return endpoint, nil
}
