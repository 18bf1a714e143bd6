package v1alpha3_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha3 "github.com/configbutler/gitops-reverser/api/v1alpha3"
)

const pullRequestTarget = `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, push: {mode: PullRequest}}`

// A head branch is written like spec.branch, so it is held to the same
// Git rules, each refusal naming headBranch in words.
func TestHeadBranchNamesGitRefusesAreRefusedInWords(t *testing.T) {
	ensureNamespace(t, testNamespace)
	for i, tc := range refusedBranches {
		t.Run(strconv.Quote(tc.branch), func(t *testing.T) {
			obj := parseObject(t, pullRequestTarget, "head-"+strconv.Itoa(i))
			require.NoError(t, unstructured.SetNestedField(obj.Object, tc.branch, "spec", "push", "pullRequest", "headBranch"))
			requireRefusedInWords(t, kube.Client().Create(context.Background(), obj), "spec.push.pullRequest.headBranch", tc.says)
			require.Contains(t, kube.Client().Create(context.Background(), obj).Error(), "headBranch ")
		})
	}
}

func TestPullRequestSpecRefusals(t *testing.T) {
	ensureNamespace(t, testNamespace)
	cases := []struct{ name, yaml, field, says string }{
		{"pullRequest in mode Direct", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, push: {mode: Direct, pullRequest: {headBranch: review}}}`,
			"spec.push.pullRequest", "pullRequest is only for mode PullRequest"},
		{"pullRequest without a mode", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, push: {pullRequest: {title: x}}}`,
			"spec.push.pullRequest", "pullRequest is only for mode PullRequest"},
		{"head branch equal to the base", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, push: {mode: PullRequest, pullRequest: {headBranch: main}}}`,
			"spec.push.pullRequest.headBranch", "headBranch must differ from branch"},
		{"an unknown mode", `
kind: GitTarget
spec: {providerRef: {name: p}, branch: main, path: clusters, push: {mode: Merge}}`,
			"spec.push.mode", "Unsupported value"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := kube.Client().Create(context.Background(), parseObject(t, tc.yaml, "pr-refused-"+strconv.Itoa(i)))
			require.Error(t, err, "the API server accepted it")
			t.Log(err)
			require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			require.Contains(t, err.Error(), tc.field+":")
			require.Contains(t, err.Error(), tc.says)
			require.Contains(t, causeFields(err), tc.field)
		})
	}
}

func TestPushDefaultsToDirect(t *testing.T) {
	ensureNamespace(t, testNamespace)
	ctx := context.Background()
	c := kube.Client()
	require.NoError(t, c.Create(ctx, parseObject(t, "kind: GitTarget\nspec: {providerRef: {name: p}, branch: main, path: clusters}", "push-default")))
	var gt v1alpha3.GitTarget
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "push-default"}, &gt))
	require.NotNil(t, gt.Spec.Push)
	require.Equal(t, v1alpha3.PushDirect, gt.Spec.Push.Mode)
	require.False(t, gt.Spec.PullRequestMode())
	require.Equal(t, "main", gt.HeadBranch(), "a direct target writes its branch")

	require.NoError(t, c.Create(ctx, parseObject(t, pullRequestTarget, "review")))
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "review"}, &gt))
	require.True(t, gt.Spec.PullRequestMode())
	require.Equal(t, "gitops-reverser/review", gt.HeadBranch(), "the head branch derives from the target's name")
}

func TestPushModeAndHeadBranchAreImmutable(t *testing.T) {
	ensureNamespace(t, testNamespace)
	ctx := context.Background()
	c := kube.Client()
	cases := []struct {
		name, yaml, field string
		mutate            func(u *unstructured.Unstructured)
	}{
		{"Direct to PullRequest", "kind: GitTarget\nspec: {providerRef: {name: p}, branch: main, path: clusters}",
			"spec.push.mode", setField("PullRequest", "spec", "push", "mode")},
		{"PullRequest to Direct", pullRequestTarget, "spec.push.mode", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "Direct", "spec", "push", "mode")
		}},
		{"the head branch", pullRequestTarget, "spec.push.pullRequest.headBranch",
			setField("review/other", "spec", "push", "pullRequest", "headBranch")},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := parseObject(t, tc.yaml, "push-immutable-"+strconv.Itoa(i))
			require.NoError(t, c.Create(ctx, obj))
			tc.mutate(obj)
			err := c.Update(ctx, obj)
			require.Error(t, err, "changing %s was accepted", tc.field)
			t.Log(err)
			require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			require.Contains(t, err.Error(), tc.field+": Invalid value")
			require.Contains(t, err.Error(), "immutable")
		})
	}
	t.Run("the title and body may change", func(t *testing.T) {
		obj := parseObject(t, pullRequestTarget, "push-mutable")
		require.NoError(t, c.Create(ctx, obj))
		require.NoError(t, unstructured.SetNestedField(obj.Object, "Mirror {{.Base}}", "spec", "push", "pullRequest", "title"))
		require.NoError(t, c.Update(ctx, obj))
	})
}
