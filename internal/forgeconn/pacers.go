package forgeconn

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/internal/credentials"
)

// Pacers share GitHub's secondary-limit pacing between the forge clients
// of one App installation or token. GitHub counts content-creating
// requests per installation (or user); the operator opens a client per
// branch, and clients that each counted alone could together pass the
// limit. The zero value is ready to use; a nil *Pacers opens clients that
// pace alone.
type Pacers struct {
	mu     sync.Mutex
	github map[string]*github.ContentPacer
}

// Open is the package's Open, with the GitHub client's pacer shared with
// every client opened here for the same installation or token.
func (p *Pacers) Open(spec v1alpha3.GitProviderSpec, creds credentials.Credentials, rt http.RoundTripper) (forges.Forge, error) {
	return open(spec, creds, rt, p)
}

// forGitHub returns the pacer of the identity opts authenticates as at its
// API, creating it on first use; nil without Pacers.
func (p *Pacers) forGitHub(opts github.Options) *github.ContentPacer {
	if p == nil {
		return nil
	}
	var identity string
	switch {
	case opts.App != nil:
		identity = "installation:" + strconv.FormatInt(opts.App.InstallationID, 10)
	default:
		sum := sha256.Sum256([]byte(opts.Token))
		identity = "token:" + hex.EncodeToString(sum[:])
	}
	key := opts.APIURL + " " + identity
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.github == nil {
		p.github = map[string]*github.ContentPacer{}
	}
	pacer, ok := p.github[key]
	if !ok {
		pacer = github.NewContentPacer(opts.Now, opts.ContentPerMinute, opts.ContentPerHour)
		p.github[key] = pacer
	}
	return pacer
}
