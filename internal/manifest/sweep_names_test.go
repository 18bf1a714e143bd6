package manifest_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// A sweep that names what it found deletes exactly what the same sweep by
// whole identity deletes: the scope fixes group, kind and namespace.
func TestASweepByNamesIsTheSweepByIdentity(t *testing.T) {
	ix := sweepIndex(t)
	teamA := manifest.SweepScope{Kind: "ConfigMap", Namespace: "team-a"}
	deployments := manifest.SweepScope{Group: "apps", Kind: "Deployment", Namespace: "team-a"}
	byID := []manifest.ScopeSweep{
		{Scope: teamA, Present: []manifest.ObjectID{configMapID("team-a", "keep")}},
		{Scope: deployments},
		{Scope: manifest.SweepScope{Kind: "Namespace"}, Present: []manifest.ObjectID{{Version: "v1", Kind: "Namespace", Name: "team-a"}}},
	}
	byName := []manifest.ScopeSweep{
		{Scope: teamA, Names: []string{"keep"}},
		{Scope: deployments, Names: []string{}},
		{Scope: manifest.SweepScope{Kind: "Namespace"}, Names: []string{"team-a"}},
	}
	want := manifest.SweepAll(ix, byID)
	require.Len(t, want, 3, "team-a/gone, the deployment, namespace old")
	require.Equal(t, want, manifest.SweepAll(ix, byName))
}

// An identity the scope does not cover keeps nothing of the scope, even
// under a name the scope holds: found by its own name only in its scope.
func TestAnIdentityOutsideTheScopeIsNotFoundInIt(t *testing.T) {
	ix := sweepIndex(t)
	teamA := manifest.SweepScope{Kind: "ConfigMap", Namespace: "team-a"}
	sw := manifest.ScopeSweep{Scope: teamA, Names: []string{"keep"},
		Present: []manifest.ObjectID{configMapID("team-b", "gone"), configMapID("team-a", "keep")}}

	require.Equal(t, []string{"keep", "keep"}, slices.Collect(sw.Found()), "names first, then the covered identities")
	deletes := manifest.SweepAll(ix, []manifest.ScopeSweep{sw})
	require.Equal(t, []manifest.Delete{{ID: manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "gone"}}}, deletes)
}

// A sweep as a journal keeps it: names when it has them, and a sweep
// written by whole identity (a version 1 entry) reads back as it was.
func TestASweepRoundTripsThroughJSON(t *testing.T) {
	scope := manifest.SweepScope{Kind: "ConfigMap", Namespace: "team-a"}
	for name, sw := range map[string]manifest.ScopeSweep{
		"by name":     {Scope: scope, Names: []string{"keep", "other"}},
		"by identity": {Scope: scope, Present: []manifest.ObjectID{configMapID("team-a", "keep")}},
		"nothing":     {Scope: scope},
	} {
		data, err := json.Marshal(sw)
		require.NoError(t, err)
		var back manifest.ScopeSweep
		require.NoError(t, json.Unmarshal(data, &back))
		require.Equal(t, slices.Collect(sw.Found()), slices.Collect(back.Found()), name)
	}
	var v1 manifest.ScopeSweep
	require.NoError(t, json.Unmarshal([]byte(`{"Scope":{"Group":"","Kind":"ConfigMap","Namespace":"team-a"},`+
		`"Present":[{"Group":"","Version":"v1","Kind":"ConfigMap","Resource":"configmaps","Namespace":"team-a","Name":"keep"}]}`), &v1))
	require.Equal(t, []string{"keep"}, slices.Collect(v1.Found()))
}
