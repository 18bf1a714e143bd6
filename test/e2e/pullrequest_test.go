package e2e

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// giteaMirrorWith is giteaMirror with the GitProvider's allowedBranches
// and the GitTarget's spec.push given: in mode PullRequest, branch is the
// base, and allowed names the head branches (nothing is written to the
// base).
func giteaMirrorWith(t *testing.T, g *harness.Gitea, ns, owner, repo, branch string, allowed []string, push *v1alpha3.TargetPush) {
	t.Helper()
	apply(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha3.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: v1alpha3.ClusterProviderSpec{AllowedNamespaces: &v1alpha3.NamespacePolicy{Selector: &metav1.LabelSelector{}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitea-token"}, StringData: map[string]string{"token": g.Token()}},
		&v1alpha3.GitProvider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gitea"}, Spec: v1alpha3.GitProviderSpec{
			URL:             g.HTTPCloneURL(owner, repo),
			Forge:           &v1alpha3.ForgeSpec{Type: v1alpha3.ForgeGitea},
			SecretRef:       &v1alpha3.LocalObjectReference{Name: "gitea-token"},
			AllowedBranches: allowed,
			Push:            v1alpha3.PushSpec{CommitWindow: &metav1.Duration{Duration: 300 * time.Millisecond}},
		}},
		&v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mirror"},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "gitea"}, Branch: branch, Path: "live", Push: push}},
		watchRule(ns, "configmaps", "mirror", "configmaps"),
		configMap(ns, "first", map[string]string{"v": "1"}),
	)
}

// pullRequestStatus reads the GitTarget's status.pullRequest; nil before
// the operator wrote one.
func pullRequestStatus(t *testing.T, ns string) *v1alpha3.PullRequestStatus {
	t.Helper()
	var gt v1alpha3.GitTarget
	if err := env.kube.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "mirror"}, &gt); err != nil {
		return nil
	}
	return gt.Status.PullRequest
}

// TestAPullRequestTargetKeepsOneRollingPullRequestOnGitea: a protected main
// gets its changes through one pull request at a time. The first change
// opens it (main untouched), later ones update the same one, a merge
// through Gitea's API makes the next change open a new one, and after the
// last merge main equals the cluster.
func TestAPullRequestTargetKeepsOneRollingPullRequestOnGitea(t *testing.T) {
	g := sharedGitea(t)
	const name = "gitea-pull-requests"
	repo, err := g.CreateRepo(name, true)
	require.NoError(t, err)
	owner, ns, head := repo.Owner.UserName, "via-gitea-pr", "gitops-reverser/mirror"
	api := g.Client()
	base, _, err := api.GetRepoBranch(owner, name, "main")
	require.NoError(t, err)
	file := func(ref, path string) string {
		c, _, err := api.GetContents(owner, name, ref, path)
		if err != nil || c.Content == nil {
			return ""
		}
		b, _ := base64.StdEncoding.DecodeString(*c.Content)
		return string(b)
	}
	openPulls := func() []*gitea.PullRequest {
		pulls, _, err := api.ListRepoPullRequests(owner, name, gitea.ListPullRequestsOptions{State: gitea.StateOpen})
		require.NoError(t, err)
		return pulls
	}

	giteaMirrorWith(t, g, ns, owner, name, "main", []string{"gitops-reverser/*"}, &v1alpha3.TargetPush{Mode: v1alpha3.PushPullRequest})
	startOperator(t)

	var first *v1alpha3.PullRequestStatus
	eventuallyWithin(t, time.Minute, "status.pullRequest names the opened pull request", func() bool {
		first = pullRequestStatus(t, ns)
		return first != nil && first.Number != 0 && first.URL != "" && first.State == "open"
	})
	require.Equal(t, head, first.HeadBranch)
	require.Equal(t, "main", first.BaseBranch)
	pulls := openPulls()
	require.Len(t, pulls, 1)
	require.Equal(t, first.Number, pulls[0].Index)
	require.Equal(t, head, pulls[0].Head.Ref)
	require.Equal(t, "main", pulls[0].Base.Ref)
	require.Contains(t, file(head, "live/"+ns+"/configmaps/first.yaml"), `v: "1"`)
	after, _, err := api.GetRepoBranch(owner, name, "main")
	require.NoError(t, err)
	require.Equal(t, base.Commit.ID, after.Commit.ID, "the base is untouched")
	require.Equal(t, metav1.ConditionTrue, conditionStatus(t, ns, "mirror", v1alpha3.ConditionPullRequest))

	// More changes update the same pull request.
	setData(t, ns, "first", "2")
	apply(t, configMap(ns, "second", map[string]string{"v": "1"}))
	eventually(t, "the changes on the head branch", func() bool {
		return strings.Contains(file(head, "live/"+ns+"/configmaps/first.yaml"), `v: "2"`) &&
			file(head, "live/"+ns+"/configmaps/second.yaml") != ""
	})
	require.Len(t, openPulls(), 1, "one pull request")
	defer func() {
		if t.Failed() {
			t.Logf("status.pullRequest at the failure: %+v; condition %+v", pullRequestStatus(t, ns), targetCondition(t, ns, "mirror", v1alpha3.ConditionPullRequest))
			if pr, _, err := api.GetPullRequest(owner, name, first.Number); err == nil {
				br, _, _ := api.GetRepoBranch(owner, name, head)
				t.Logf("pull request #%d: merged %t, head.sha %s, merged commit %v; head branch at %s", pr.Index, pr.HasMerged, pr.Head.Sha, pr.MergedCommitID, br.Commit.ID)
			}
		}
	}()
	require.Equal(t, first.Number, pullRequestStatus(t, ns).Number)
	after, _, err = api.GetRepoBranch(owner, name, "main")
	require.NoError(t, err)
	require.Equal(t, base.Commit.ID, after.Commit.ID, "the base is still untouched")

	// Merged by a human: the next change opens a new pull request.
	require.NoError(t, g.MergePullRequest(mergeContext(t), owner, name, first.Number))
	require.Contains(t, file("main", "live/"+ns+"/configmaps/first.yaml"), `v: "2"`)
	setData(t, ns, "first", "3")
	var second *v1alpha3.PullRequestStatus
	eventually(t, "a new pull request after the merge", func() bool {
		second = pullRequestStatus(t, ns)
		return second != nil && second.Number != 0 && second.Number != first.Number && second.State == "open"
	})
	t.Logf("after the merge: %+v", *second)
	require.Len(t, openPulls(), 1)
	require.Contains(t, file(head, "live/"+ns+"/configmaps/first.yaml"), `v: "3"`)

	// After the final merge, main equals the cluster.
	require.NoError(t, g.MergePullRequest(mergeContext(t), owner, name, second.Number))
	require.Contains(t, file("main", "live/"+ns+"/configmaps/first.yaml"), `v: "3"`)
	require.Contains(t, file("main", "live/"+ns+"/configmaps/second.yaml"), `v: "1"`)
}

// setData sets data.v of ConfigMap ns/name.
func setData(t *testing.T, ns, name, v string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	edit(t, cm, func() { cm.Data = map[string]string{"v": v} })
}

// TestABadHeadBranchIsRefused: the API server refuses a head branch Git
// would, naming the field; a head branch the GitProvider's allowedBranches
// does not admit is refused with a condition that names it, and nothing
// is written.
func TestABadHeadBranchIsRefused(t *testing.T) {
	g := sharedGitea(t)
	const name = "gitea-pull-request-refused"
	repo, err := g.CreateRepo(name, true)
	require.NoError(t, err)
	owner, ns := repo.Owner.UserName, "via-gitea-pr-refused"

	invalid := &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bad-head"},
		Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: "gitea"}, Branch: "main", Path: "live",
			Push: &v1alpha3.TargetPush{Mode: v1alpha3.PushPullRequest, PullRequest: &v1alpha3.PullRequestSpec{HeadBranch: "review..x"}}}}
	err = env.kube.Client().Create(context.Background(), invalid)
	require.Error(t, err)
	require.Contains(t, err.Error(), "spec.push.pullRequest.headBranch")
	require.Contains(t, err.Error(), "headBranch must be a valid Git branch name")

	// main is allowed, the head branch (gitops-reverser/mirror) is not.
	giteaMirrorWith(t, g, ns, owner, name, "main", []string{"main"}, &v1alpha3.TargetPush{Mode: v1alpha3.PushPullRequest})
	startOperator(t)
	eventuallyWithin(t, time.Minute, "Validated False naming the head branch", func() bool {
		c := targetCondition(t, ns, "mirror", v1alpha3.ConditionValidated)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha3.ReasonBranchNotAllowed &&
			strings.Contains(c.Message, `head branch "gitops-reverser/mirror"`)
	})
	require.Equal(t, metav1.ConditionTrue, conditionStatus(t, ns, "mirror", v1alpha3.ConditionStalled))
	branches, _, err := g.Client().ListRepoBranches(owner, name, gitea.ListRepoBranchesOptions{})
	require.NoError(t, err)
	require.Len(t, branches, 1, "nothing was written")
}

// mergeContext bounds a reviewer's merge on Gitea, which is asked again
// while Gitea still checks the pull request.
func mergeContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
