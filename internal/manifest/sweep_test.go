package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

func sweepIndex(t *testing.T) *manifest.Index {
	return newIndex(t, ".", withReadme(".", map[string]string{
		"team-a/configmaps/keep.yaml":       configMapYAML("team-a", "keep", "v"),
		"team-a/configmaps/gone.yaml":       configMapYAML("team-a", "gone", "v"),
		"team-b/configmaps/gone.yaml":       configMapYAML("team-b", "gone", "v"),
		"team-a/secrets/gone.sops.yaml":     encryptedSecretYAML("team-a", "gone", "x"),
		"team-a/apps/deployments/gone.yaml": deploymentYAML("team-a", "gone", 1),
		"_cluster/namespaces/old.yaml":      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: old\n",
		"_cluster/namespaces/team-a.yaml":   "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n",
	}))
}

func TestSweepDeletesOnlyTheScopedTypeAndNamespace(t *testing.T) {
	ix := sweepIndex(t)

	deletes := manifest.Sweep(ix, manifest.SweepScope{Kind: "ConfigMap", Namespace: "team-a"},
		[]manifest.ObjectID{configMapID("team-a", "keep")})

	require.Equal(t, []manifest.Delete{{ID: manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "gone"}}}, deletes,
		"secrets, deployments and other namespaces named gone are not this sweep's business")
}

func TestSweepOfAClusterScopedType(t *testing.T) {
	ix := sweepIndex(t)
	namespace := func(name string) manifest.ObjectID {
		return manifest.ObjectID{Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: name}
	}

	deletes := manifest.Sweep(ix, manifest.SweepScope{Kind: "Namespace"}, []manifest.ObjectID{namespace("team-a")})

	require.Len(t, deletes, 1)
	require.True(t, deletes[0].ID.SameObject(namespace("old")))
}

func TestSweepMatchesTheDesiredSetWhateverItsVersion(t *testing.T) {
	ix := sweepIndex(t)
	desired := []manifest.ObjectID{
		{Group: "apps", Version: "v2", Kind: "Deployment", Namespace: "team-a", Name: "gone"},
	}

	require.Empty(t, manifest.Sweep(ix, manifest.SweepScope{Group: "apps", Kind: "Deployment", Namespace: "team-a"}, desired))
}

func TestSweepDeletesPlanLikeAnyOtherBatch(t *testing.T) {
	ix := sweepIndex(t)
	deletes := manifest.Sweep(ix, manifest.SweepScope{Kind: "ConfigMap", Namespace: "team-a"},
		[]manifest.ObjectID{configMapID("team-a", "keep")})
	ops := make([]manifest.Op, 0, len(deletes))
	for _, d := range deletes {
		ops = append(ops, d)
	}

	result := plan(t, ix, ops...)

	require.Equal(t, map[string]string{"team-a/configmaps/gone.yaml": "<deleted>"}, contents(result))
}

// TestSweepAllIsEachSweepInTurn: one pass over the index for many scopes
// deletes what sweeping each scope on its own would, and a scope swept
// twice deletes what either sweep did not find.
func TestSweepAllIsEachSweepInTurn(t *testing.T) {
	ix := sweepIndex(t)
	teamA := manifest.SweepScope{Kind: "ConfigMap", Namespace: "team-a"}
	teamB := manifest.SweepScope{Kind: "ConfigMap", Namespace: "team-b"}
	deployments := manifest.SweepScope{Group: "apps", Kind: "Deployment", Namespace: "team-a"}
	sweeps := []manifest.ScopeSweep{
		{Scope: teamA, Present: []manifest.ObjectID{configMapID("team-a", "keep"), configMapID("team-a", "gone")}},
		{Scope: teamB},
		{Scope: deployments, Present: []manifest.ObjectID{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "gone"}}},
		{Scope: teamA, Present: []manifest.ObjectID{configMapID("team-a", "keep")}},
	}
	var each []manifest.Delete
	for _, sw := range sweeps {
		for _, d := range manifest.Sweep(ix, sw.Scope, sw.Present) {
			if !containsDelete(each, d) {
				each = append(each, d)
			}
		}
	}
	all := manifest.SweepAll(ix, sweeps)
	require.ElementsMatch(t, each, all)
	require.Len(t, all, 2, "team-a/gone (the second sweep of team-a did not find it) and team-b/gone")
}

func containsDelete(ds []manifest.Delete, d manifest.Delete) bool {
	for _, x := range ds {
		if x.ID == d.ID {
			return true
		}
	}
	return false
}
