package forges_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gitea"
	"github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/forges/gitlab"
	"github.com/configbutler/gitops-reverser/forges/gogit"
)

// TestWhichForgesHavePullRequests pins what docs/pull-request-mode.md
// says: GitHub and Gitea open pull requests and merge the base into the
// head; GitLab opens merge requests but only rebases, which pull-request
// mode does not use; plain Git has no pull requests at all.
func TestWhichForgesHavePullRequests(t *testing.T) {
	for name, tc := range map[string]struct {
		forge                forges.Forge
		requester, baseMerge bool
	}{
		"github": {forge: (*github.Client)(nil), requester: true, baseMerge: true},
		"gitea":  {forge: (*gitea.Client)(nil), requester: true, baseMerge: true},
		"gitlab": {forge: (*gitlab.Client)(nil), requester: true},
		"git":    {forge: (*gogit.Client)(nil)},
	} {
		_, requester := tc.forge.(forges.PullRequester)
		_, baseMerger := tc.forge.(forges.BaseMerger)
		require.Equal(t, tc.requester, requester, name)
		require.Equal(t, tc.baseMerge, baseMerger, name)
	}
}
