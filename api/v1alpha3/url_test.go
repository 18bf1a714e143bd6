package v1alpha3_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestURLsWithoutAPasswordAreAccepted: the rule against a password in
// spec.url refuses no URL that carries only a user name, a port or an '@'
// after the host.
func TestURLsWithoutAPasswordAreAccepted(t *testing.T) {
	ensureNamespace(t, testNamespace)
	for i, url := range []string{
		"https://github.com/org/repo.git",
		"https://x-access-token@github.com/org/repo.git",
		"ssh://git@git.example.com:2222/org/repo.git",
		"git@github.com:org/repo.git",
		"https://git.example.com:8443/org/repo.git",
		"https://git.example.com/team@org/repo.git",
		"file:///srv/git/repo.git",
	} {
		obj := parseObject(t, "kind: GitProvider\nspec: {allowedBranches: [main]}", "url-"+strconv.Itoa(i))
		require.NoError(t, unstructured.SetNestedField(obj.Object, url, "spec", "url"))
		require.NoError(t, kube.Client().Create(context.Background(), obj), "url %q", url)
	}
}
