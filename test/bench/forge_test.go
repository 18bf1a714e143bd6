package bench

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	ghsim "github.com/configbutler/gitops-reverser/test/sim/github"
)

// forgeKind names the remote a scenario commits to; it is the name of the
// scenario's sub-benchmark (BenchmarkColdStart/git, /gitea, /github).
type forgeKind string

const (
	// forgeGit is go-git over smart HTTP to git http-backend.
	forgeGit forgeKind = "git"
	// forgeGitea is the Gitea API forge against a real Gitea (test/harness).
	forgeGitea forgeKind = "gitea"
	// forgeGitHub is the GitHub API forge against the GitHub simulator
	// (test/sim/github), served by this process on loopback.
	forgeGitHub forgeKind = "github"
	// forgeGiteaPush is go-git over smart HTTP to the same Gitea, with the
	// same token: the reference the Gitea API forge is measured against
	// (scenario F only).
	forgeGiteaPush forgeKind = "gitea-push"
)

var allForges = []forgeKind{forgeGit, forgeGitea, forgeGitHub}

// forEachForge runs a scenario once per forge, as sub-benchmarks named
// after the forge, so `-bench 'ColdStart/gitea'` selects one.
func forEachForge(b *testing.B, scenario func(b *testing.B, fk forgeKind)) {
	forEachForgeOf(b, allForges, scenario)
}

// forEachForgeOf is forEachForge over kinds, in their order.
func forEachForgeOf(b *testing.B, kinds []forgeKind, scenario func(b *testing.B, fk forgeKind)) {
	for _, fk := range kinds {
		b.Run(string(fk), func(b *testing.B) { scenario(b, fk) })
	}
}

// Identities on the GitHub simulator: the operator's token, and the
// benchmark's own, for reading what the operator committed.
const (
	githubOwner         = "bench"
	githubOperatorToken = "ghp_benchOperatorToken"
	githubReaderToken   = "ghp_benchReaderToken"
)

// forgeRepo is one fresh, empty repository: how the operator reaches it
// (the GitProvider's url and forge, the Secret's data) and how the
// benchmark reads it.
type forgeRepo struct {
	kind   forgeKind
	url    string
	forge  v1alpha3.ForgeSpec
	secret map[string]string
	remote remote
	// github is the repository's simulator (one per repository, so its
	// request log and rate limits are the scenario's own); nil elsewhere.
	github *githubRepo
}

// close releases what the repository holds beyond the scenario: the
// GitHub simulator.
func (r *forgeRepo) close() {
	if r.github != nil {
		r.github.sim.Close()
	}
}

// newForgeRepo creates an empty repository name on forge fk. path is the
// GitTarget's spec.path, below which the remote's queries look. simOpts
// configure the GitHub simulator.
func newForgeRepo(e *benchEnv, fk forgeKind, name, path string, simOpts ...ghsim.Option) (*forgeRepo, error) {
	switch fk {
	case forgeGit:
		if _, err := e.git.CreateBareRepo(name); err != nil {
			return nil, err
		}
		return &forgeRepo{kind: fk, url: e.git.HTTPURL(name), forge: v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit},
			secret: map[string]string{"username": gitUser, "password": gitPassword},
			remote: bareRemote{gitDir: e.git.RepoPath(name), path: path}}, nil
	case forgeGitea, forgeGiteaPush:
		g, err := e.giteaServer()
		if err != nil {
			return nil, err
		}
		repo, err := g.server.CreateRepo(name, false)
		if err != nil {
			return nil, err
		}
		owner := repo.Owner.UserName
		r := &forgeRepo{kind: fk, url: g.server.HTTPCloneURL(owner, name), forge: v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea},
			secret: map[string]string{"token": g.server.Token()},
			remote: bareRemote{gitDir: g.repoPath(owner, name), path: path}}
		if fk == forgeGiteaPush {
			// Gitea takes a token as the password of HTTP basic auth.
			r.forge = v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGit}
			r.secret = map[string]string{"username": g.server.AdminUser(), "password": g.server.Token()}
		}
		return r, nil
	case forgeGitHub:
		sim := ghsim.Start(simOpts...)
		sim.AddToken(githubOperatorToken)
		sim.AddToken(githubReaderToken)
		if err := sim.CreateRepo(githubOwner, name, nil); err != nil {
			sim.Close()
			return nil, fmt.Errorf("creating the simulated GitHub repository %s: %w", name, err)
		}
		gh := newGitHubRepo(sim, githubOwner, name, path)
		return &forgeRepo{kind: fk, url: "https://github.com/" + githubOwner + "/" + name + ".git",
			forge:  v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitHub, APIURL: sim.URL()},
			secret: map[string]string{"token": githubOperatorToken}, remote: gh, github: gh}, nil
	}
	return nil, fmt.Errorf("unknown forge %q", fk)
}

// probeForge is a forge client on a repository of its own holding one
// commit, of the same kind the operator commits to: for timing single
// commits apart from the operator. rt carries the API forges' requests.
type probeForge struct {
	forge forges.Forge
	head  string
	close func()
}

func newProbeForge(ctx context.Context, e *benchEnv, fk forgeKind, name string, rt http.RoundTripper) (*probeForge, error) {
	seed := map[string]string{"README.md": "commit probe\n"}
	p := &probeForge{close: func() {}}
	var err error
	switch fk {
	case forgeGit:
		if _, err = e.git.CreateRepoWithCommit(name, seed); err != nil {
			return nil, err
		}
		p.forge, err = gogit.New(gogit.Options{URL: e.git.HTTPURL(name), Auth: gogit.BasicAuth{Username: gitUser, Password: gitPassword}})
	case forgeGitea:
		var g *benchGitea
		if g, err = e.giteaServer(); err == nil {
			p.forge, err = g.operatorClient(name, rt)
		}
	case forgeGitHub:
		sim := ghsim.Start()
		p.close = sim.Close
		sim.AddToken(githubOperatorToken)
		if err = sim.CreateRepo(githubOwner, name, seed); err != nil {
			sim.Close()
			return nil, err
		}
		p.forge, err = github.New(github.Options{Owner: githubOwner, Repo: name, APIURL: sim.URL(), Token: githubOperatorToken, Transport: rt})
	default:
		err = fmt.Errorf("unknown forge %q", fk)
	}
	if err == nil {
		p.head, err = p.forge.Head(ctx, "main")
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("opening the commit probe's %s forge: %w", fk, err)
	}
	return p, nil
}
