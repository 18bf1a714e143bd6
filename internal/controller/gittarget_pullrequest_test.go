package controller

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
)

func TestThePullRequestConditionFollowsTheWorkersLastWord(t *testing.T) {
	st := &v1alpha3.PullRequestStatus{HeadBranch: "gitops-reverser/prod", BaseBranch: "main", URL: "https://forge/pr/7", Number: 7}
	tests := []struct {
		name   string
		info   *branch.PullRequestInfo
		ok     bool
		reason string
		says   string
	}{
		{"nothing said yet", nil, true, v1alpha3.ReasonPullRequestPending, "the next change"},
		{"a forge without pull requests", &branch.PullRequestInfo{Supported: false}, false, v1alpha3.ReasonPullRequestsUnsupported, "open the pull request into \"main\" by hand"},
		{"a conflict a human resolves", &branch.PullRequestInfo{Supported: true, Number: 7, State: forges.PullRequestOpen, Conflict: true},
			false, v1alpha3.ReasonPullRequestConflict, "resolve the conflict on pull request https://forge/pr/7"},
		{"a failed request", &branch.PullRequestInfo{Supported: true, Number: 7, State: forges.PullRequestOpen, Err: errors.New("502")},
			false, v1alpha3.ReasonPullRequestFailing, "tried again at the next change"},
		{"open", &branch.PullRequestInfo{Supported: true, Number: 7, State: forges.PullRequestOpen, Note: "updated"},
			true, v1alpha3.ReasonPullRequestOpen, "pull request #7 from \"gitops-reverser/prod\" into \"main\" is open"},
		{"merged", &branch.PullRequestInfo{Supported: true, Number: 7, State: forges.PullRequestMerged},
			true, v1alpha3.ReasonPullRequestPending, "was merged; the next change starts head branch"},
		{"none open", &branch.PullRequestInfo{Supported: true}, true, v1alpha3.ReasonPullRequestPending, "no pull request is open"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := pullRequestCondition(st, tc.info)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.reason, reason)
			require.Contains(t, msg, tc.says)
		})
	}
}

func TestATargetsWayOfWritingItsBranch(t *testing.T) {
	target := func(name, base string, push *v1alpha3.TargetPush) *v1alpha3.GitTarget {
		return &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha3.GitTargetSpec{Branch: base, Push: push}}
	}
	pr := &v1alpha3.TargetPush{Mode: v1alpha3.PushPullRequest}
	direct := target("a", "gitops-reverser/b", &v1alpha3.TargetPush{Mode: v1alpha3.PushDirect})
	review := target("b", "main", pr)
	reviewToo := target("c", "main", &v1alpha3.TargetPush{Mode: v1alpha3.PushPullRequest,
		PullRequest: &v1alpha3.PullRequestSpec{HeadBranch: "gitops-reverser/b"}})
	otherBase := target("d", "release", &v1alpha3.TargetPush{Mode: v1alpha3.PushPullRequest,
		PullRequest: &v1alpha3.PullRequestSpec{HeadBranch: "gitops-reverser/b"}})

	require.Equal(t, "gitops-reverser/b", review.HeadBranch(), "the default head derives from the name")
	for _, t2 := range []*v1alpha3.GitTarget{direct, reviewToo, otherBase} {
		require.Equal(t, review.HeadBranch(), t2.HeadBranch(), "all four write one branch")
	}
	require.Equal(t, writesAs(review), writesAs(reviewToo), "two pull-request targets with one base share the head")
	require.NotEqual(t, writesAs(review), writesAs(direct), "a direct target writing a head conflicts")
	require.NotEqual(t, writesAs(review), writesAs(otherBase), "another base conflicts")
	require.Equal(t, "direct", writesAs(target("e", "main", nil)), "no spec.push is direct")
}

func TestWhoSharesAHeadBranchAndADestination(t *testing.T) {
	target := func(ns, provider, name, branch string, push *v1alpha3.TargetPush) *v1alpha3.GitTarget {
		return &v1alpha3.GitTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha3.GitTargetSpec{ProviderRef: v1alpha3.GitProviderReference{Name: provider}, Branch: branch, Push: push}}
	}
	pr := &v1alpha3.TargetPush{Mode: v1alpha3.PushPullRequest}
	teamA := target("team-a", "platform", "prod", "main", pr)
	teamAToo := target("team-a", "platform", "prod-too", "main", pr)
	teamB := target("team-b", "platform", "prod", "main", pr)
	direct := target("team-c", "platform", "live", "main", nil)
	release := target("team-a", "platform", "release", "release", pr)

	require.True(t, sameWorker(teamA, teamAToo), "one GitProvider: one worker")
	require.False(t, sameWorker(teamA, teamB), "another namespace's GitProvider is another worker, though the head is the same")
	require.Equal(t, teamA.HeadBranch(), teamB.HeadBranch())

	require.True(t, sameDestination(teamA, direct), "a pull request into main lands where a direct target on main writes")
	require.True(t, sameDestination(teamA, teamAToo), "two pull requests into main")
	require.False(t, sameDestination(teamA, release), "another base, another head")
	intoHead := target("team-d", "platform", "staging", "gitops-reverser/prod", pr)
	require.True(t, sameDestination(teamA, intoHead), "a pull request into another's head lands on that head")
	require.Equal(t, `"main"`, sharedBranch(teamA, direct))
}
