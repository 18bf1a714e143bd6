package forges_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

func TestPathsGitCannotStoreAreRefused(t *testing.T) {
	for _, p := range []string{"", "/abs", "a//b", "a/./b", "../x", "a/.git/config", "a/.GIT", "nul\x00byte"} {
		require.Error(t, forges.ValidatePath(p), "%q", p)
	}
	for _, p := range []string{"a", "team/configmaps/app.yaml", ".sops.yaml", "a/.github/x.yml"} {
		require.NoError(t, forges.ValidatePath(p), "%q", p)
	}
}

func TestCleanPrefix(t *testing.T) {
	for in, want := range map[string]string{"": "", ".": "", "./": "", "clusters/": "clusters", "./a/b": "a/b", "/a/": "a"} {
		got, err := forges.CleanPrefix(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := forges.CleanPrefix("a/../b")
	require.Error(t, err)
}

func TestEscapePathSegmentsKeepsTheSlashes(t *testing.T) {
	require.Equal(t, "gitops-reverser/prod", forges.EscapePathSegments("gitops-reverser/prod"))
	require.Equal(t, "a%20b/c%23d%3Fe%25f", forges.EscapePathSegments("a b/c#d?e%f"))
}
