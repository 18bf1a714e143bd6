package v1alpha3_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// refusedBranches are branch names `git check-ref-format --branch` refuses
// (or that would make the operator push a ref that is not the branch
// meant), each with the words the refusal must say.
var refusedBranches = []struct{ branch, says string }{
	{"HEAD", "must not be HEAD"},
	{"refs/heads/main", "not a ref"},
	{"refs/tags/v1", "not a ref"},
	{"feature..x", "no '..'"},
	{"feature//x", "'//'"},
	{"feature/", "trailing '/'"},
	{"feature.", "trailing '/', '.'"},
	{"feature.lock", "'.lock'"},
	{"team.lock/x", "end with '.lock'"},
	{"team/.hidden", "may start with '.'"},
	{"-x", "letters, digits"},
	{"/x", "letters, digits"},
	{".x", "letters, digits"},
	{"my branch", "letters, digits"},
	{"a\tb", "letters, digits"},
	{"a~1", "letters, digits"},
	{"a^1", "letters, digits"},
	{"a:b", "letters, digits"},
	{"a?b", "letters, digits"},
	{"a*b", "letters, digits"},
	{"a[b", "letters, digits"},
	{`a\b`, "letters, digits"},
	{"main@{1}", "letters, digits"},
}

// refusedBranchPatterns are allowedBranches entries that can only match
// names Git refuses, or a ref instead of a branch.
var refusedBranchPatterns = []struct{ pattern, says string }{
	{"HEAD", "must not name HEAD"},
	{"refs/heads/*", "not refs"},
	{"release/..", "no '..'"},
	{"release//*", "'//'"},
	{"/release/*", "leading or trailing '/'"},
	{"release/", "leading or trailing '/'"},
	{"release.", "trailing '.'"},
	{"*.lock", "end with '.lock'"},
	{"team/.*", "may start with '.'"},
	{"-*", "'-' (not first)"},
	{"my branch", "letters, digits"},
	{"a\tb", "letters, digits"},
	{"a~*", "letters, digits"},
	{"a:*", "letters, digits"},
	{`a\*`, "letters, digits"},
	{"main@{1}", "letters, digits"},
}

func TestBranchNamesGitRefusesAreRefusedInWords(t *testing.T) {
	ensureNamespace(t, testNamespace)
	for i, tc := range refusedBranches {
		t.Run(strconv.Quote(tc.branch), func(t *testing.T) {
			obj := parseObject(t, "kind: GitTarget\nspec: {providerRef: {name: p}, path: clusters}", "branch-"+strconv.Itoa(i))
			require.NoError(t, unstructured.SetNestedField(obj.Object, tc.branch, "spec", "branch"))
			requireRefusedInWords(t, kube.Client().Create(context.Background(), obj), "spec.branch", tc.says)
		})
	}
	for i, tc := range refusedBranchPatterns {
		t.Run("allowedBranches "+strconv.Quote(tc.pattern), func(t *testing.T) {
			obj := parseObject(t, `kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git"}`, "pattern-"+strconv.Itoa(i))
			require.NoError(t, unstructured.SetNestedStringSlice(obj.Object, []string{"main", tc.pattern}, "spec", "allowedBranches"))
			requireRefusedInWords(t, kube.Client().Create(context.Background(), obj), "spec.allowedBranches[1]", tc.says)
		})
	}
}

func TestBranchNamesGitAcceptsAreAccepted(t *testing.T) {
	ensureNamespace(t, testNamespace)
	ctx := context.Background()
	for i, branch := range []string{"main", "release/1.2", "feature/JIRA-12_fix", "v1.0.0", "HEADS-up", "team/refs/x", "a.b/c-d"} {
		obj := parseObject(t, "kind: GitTarget\nspec: {providerRef: {name: p}, path: clusters}", "good-branch-"+strconv.Itoa(i))
		require.NoError(t, unstructured.SetNestedField(obj.Object, branch, "spec", "branch"))
		require.NoError(t, kube.Client().Create(ctx, obj), "branch %q", branch)
	}
	patterns := []string{"*", "main", "release/*", "feature-[0-9]*", "[^x]*", "team/?", "env/*/live", "v1.*"}
	obj := parseObject(t, `kind: GitProvider
spec: {url: "https://git.example.com/org/repo.git"}`, "good-patterns")
	require.NoError(t, unstructured.SetNestedStringSlice(obj.Object, patterns, "spec", "allowedBranches"))
	require.NoError(t, kube.Client().Create(ctx, obj), "allowedBranches %q", patterns)
}

func requireRefusedInWords(t *testing.T, err error, field, says string) {
	t.Helper()
	require.Error(t, err, "the API server accepted it")
	t.Log(err)
	require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
	require.Contains(t, err.Error(), field+":", "the refusal names the field")
	require.Contains(t, err.Error(), says)
	require.NotContains(t, err.Error(), "should match", "a regular expression is no message")
	require.Contains(t, causeFields(err), field, fmt.Sprintf("causes: %v", causeFields(err)))
}
