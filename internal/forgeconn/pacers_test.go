package forgeconn

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges/github"
)

func TestPacersAreSharedPerInstallationOrTokenAtOneAPI(t *testing.T) {
	var p Pacers
	token := github.Options{APIURL: "https://api.github.com", Token: "t1"}
	require.Same(t, p.forGitHub(token), p.forGitHub(token), "one token, one pacer")
	require.NotSame(t, p.forGitHub(token), p.forGitHub(github.Options{APIURL: "https://api.github.com", Token: "t2"}))
	require.NotSame(t, p.forGitHub(token), p.forGitHub(github.Options{APIURL: "https://ghe.example.com/api/v3", Token: "t1"}),
		"another GitHub server counts apart")
	app := func(installation int64) github.Options {
		return github.Options{APIURL: "https://api.github.com", App: &github.AppCredentials{AppID: 1, InstallationID: installation}}
	}
	require.Same(t, p.forGitHub(app(7)), p.forGitHub(app(7)), "one installation, one pacer")
	require.NotSame(t, p.forGitHub(app(7)), p.forGitHub(app(8)))
	var none *Pacers
	require.Nil(t, none.forGitHub(token), "without Pacers a client paces alone")
}
