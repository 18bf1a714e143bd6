package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v93/github"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	ghsim "github.com/configbutler/gitops-reverser/test/sim/github"
)

// TestAPullRequestTargetKeepsOneRollingPullRequestOnGitHub is the Gitea
// case on the GitHub simulator: the first change opens a pull request
// (main untouched), later ones update it, a merge through GitHub's API
// (PUT pulls/{n}/merge) makes the next change open a new one, and after
// the last merge main equals the cluster.
func TestAPullRequestTargetKeepsOneRollingPullRequestOnGitHub(t *testing.T) {
	sim := ghsim.Start()
	t.Cleanup(sim.Close)
	const repo, ns, head, token = "pull-requests", "via-github-pr", "gitops-reverser/mirror", "e2e-pull-request-token"
	sim.AddToken(token)
	require.NoError(t, sim.CreateRepo("acme", repo, map[string]string{"README.md": "mirror\n"}))
	base, err := sim.HeadCommit("acme", repo, "main")
	require.NoError(t, err)
	reviewer, err := gh.NewClient(gh.WithURLs(new(sim.URL()+"/"), nil), gh.WithAuthToken(token))
	require.NoError(t, err)
	openPulls := func() []*gh.PullRequest {
		pulls, _, err := reviewer.PullRequests.List(context.Background(), "acme", repo, &gh.PullRequestListOptions{State: "open"})
		require.NoError(t, err)
		return pulls
	}
	file := func(branch, name string) string {
		content, _ := sim.File("acme", repo, branch, "live/"+ns+"/configmaps/"+name+".yaml")
		return content
	}
	merge := func(number int64) {
		eventually(t, "the pull request merged on GitHub", func() bool {
			// GitHub computes mergeability in the background and refuses
			// (405) a merge it has not tested yet: asked until it goes.
			_, _, err := reviewer.PullRequests.Merge(context.Background(), "acme", repo, int(number), "", nil)
			return err == nil
		})
	}

	// The target first, in mode PullRequest: githubMirror leaves an
	// existing one as it is.
	apply(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "github"}, Branch: "main", Path: "live",
				Push: &v1alpha3.TargetPush{Mode: v1alpha3.PushPullRequest}}})
	githubMirror(t, sim, ns, repo, map[string]string{"token": token}, func(s *v1alpha3.GitProviderSpec) {
		s.AllowedBranches = []string{"gitops-reverser/*"}
	})
	startOperator(t)

	var first *v1alpha3.PullRequestStatus
	eventuallyWithin(t, time.Minute, "status.pullRequest names the opened pull request", func() bool {
		first = pullRequestStatus(t, ns)
		return first != nil && first.Number != 0 && first.State == "open"
	})
	require.Contains(t, first.URL, "/pull/"+strconv.FormatInt(first.Number, 10))
	pulls := openPulls()
	require.Len(t, pulls, 1)
	require.Equal(t, head, pulls[0].GetHead().GetRef())
	require.Equal(t, "main", pulls[0].GetBase().GetRef())
	require.Contains(t, file(head, "settings"), "eu-west-1")
	after, err := sim.HeadCommit("acme", repo, "main")
	require.NoError(t, err)
	require.Equal(t, base.SHA, after.SHA, "the base is untouched")

	setData(t, ns, "settings", "2")
	apply(t, configMap(ns, "second", map[string]string{"v": "1"}))
	eventually(t, "the changes on the head branch", func() bool {
		return strings.Contains(file(head, "settings"), `v: "2"`) && file(head, "second") != ""
	})
	require.Len(t, openPulls(), 1, "one pull request")
	require.Equal(t, first.Number, pullRequestStatus(t, ns).Number)

	replays := metricSumWhere(t, "gitopsreverser_watch_replays_total", map[string]string{"resource": "configmaps"})
	merge(first.Number)
	require.Contains(t, file("main", "settings"), `v: "2"`)
	setData(t, ns, "settings", "3")
	var second *v1alpha3.PullRequestStatus
	eventually(t, "a new pull request after the merge", func() bool {
		second = pullRequestStatus(t, ns)
		return second != nil && second.Number != 0 && second.Number != first.Number && second.State == "open"
	})
	require.Len(t, openPulls(), 1)
	// The merge is learned after the change landed on the old head: the
	// target's streams replay (Outcome.Rebuild), so the new pull request
	// is written afresh from the cluster.
	eventually(t, "the target's streams replayed for the rebuild", func() bool {
		return metricSumWhere(t, "gitopsreverser_watch_replays_total", map[string]string{"resource": "configmaps"}) > replays
	})

	merge(second.Number)
	require.Contains(t, file("main", "settings"), `v: "3"`)
	require.Contains(t, file("main", "second"), `v: "1"`)

	// A younger direct target writing the head branch is refused, naming
	// the older one; it writes nothing.
	apply(t, &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "direct"},
		Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "github"}, Branch: head, Path: "elsewhere"}})
	eventually(t, "the direct target refused with HeadBranchConflict", func() bool {
		c := targetCondition(t, ns, "direct", v1alpha3.ConditionValidated)
		return c != nil && c.Reason == v1alpha3.ReasonHeadBranchConflict && strings.Contains(c.Message, ns+"/mirror")
	})
	require.Equal(t, metav1.ConditionTrue, conditionStatus(t, ns, "direct", v1alpha3.ConditionStalled))
	require.Equal(t, v1alpha3.ReasonPullRequestOpen, targetCondition(t, ns, "mirror", v1alpha3.ConditionPullRequest).Reason,
		"the older target goes on")
}
