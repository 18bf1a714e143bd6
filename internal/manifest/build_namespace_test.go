package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// A team folder the way kustomize users write it: the kustomization sets
// the namespace, the documents name none.
const teamKustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: team-a
resources:
- deploy.yaml
- role.yaml
`

const namespacelessDeployment = `# the web front end
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # no namespace: the kustomization sets it
spec:
  replicas: 1
`

const namespacelessClusterRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: web
rules: []
`

func teamFolder() map[string]string {
	return withReadme("apps", map[string]string{
		"apps/kustomization.yaml": teamKustomization,
		"apps/deploy.yaml":        namespacelessDeployment,
		"apps/role.yaml":          namespacelessClusterRole,
	})
}

func clusterRoleID(name string) manifest.ObjectID {
	return manifest.ObjectID{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Resource: "clusterroles", Name: name}
}

func TestANamespacelessDocumentIsTheObjectInTheKustomizationsNamespace(t *testing.T) {
	nested := map[string]string{
		"apps/kustomization.yaml":     "namespace: team-a\nresources:\n- web\n",
		"apps/web/kustomization.yaml": "resources:\n- ./deploy.yaml\n",
		"apps/web/deploy.yaml":        namespacelessDeployment,
	}
	overridden := map[string]string{
		"apps/kustomization.yaml":     "namespace: team-a\nresources:\n- web/\n",
		"apps/web/kustomization.yaml": "namespace: team-x\nresources:\n- deploy.yaml\n",
		"apps/web/deploy.yaml":        namespacelessDeployment,
	}
	inner := map[string]string{
		"apps/kustomization.yaml":     "resources:\n- web\n",
		"apps/web/kustomization.yaml": "namespace: team-a\nresources:\n- deploy.yaml\n",
		"apps/web/deploy.yaml":        namespacelessDeployment,
	}
	unlisted := map[string]string{
		"apps/kustomization.yaml": "namespace: team-a\nresources: []\n",
		"apps/deploy.yaml":        namespacelessDeployment,
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		id    manifest.ObjectID
		want  string // "" for no document
	}{
		{"listed beside the kustomization", teamFolder(), deploymentID("team-a", "web"), "apps/deploy.yaml"},
		{"through a directory resource", nested, deploymentID("team-a", "web"), "apps/web/deploy.yaml"},
		{"the outer namespace wins, as in a build", overridden, deploymentID("team-a", "web"), "apps/web/deploy.yaml"},
		{"the overridden inner namespace is not the build's", overridden, deploymentID("team-x", "web"), ""},
		{"set by the inner kustomization", inner, deploymentID("team-a", "web"), "apps/web/deploy.yaml"},
		{"a file no kustomization lists", unlisted, deploymentID("team-a", "web"), ""},
		{"another namespace is someone else's object", teamFolder(), deploymentID("team-b", "web"), ""},
		{"a cluster-scoped object matches its document exactly", teamFolder(), clusterRoleID("web"), "apps/role.yaml"},
		{"a cluster-scoped kind is never found in the namespace", teamFolder(),
			manifest.ObjectID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Namespace: "team-b", Name: "web"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := newIndex(t, "apps", tc.files)
			require.NoError(t, ix.Check())

			got, found := ix.Lookup(tc.id)
			require.Equal(t, tc.want != "", found)
			require.Equal(t, tc.want, got)
			_, hasDocument := ix.Document(tc.id)
			require.Equal(t, tc.want != "", hasDocument)
		})
	}
}

func TestAnUpdateOfANamespacelessDocumentEditsItInPlaceWithoutANamespace(t *testing.T) {
	files := teamFolder()
	ix := newIndex(t, "apps", files)

	result := commit(t, ix, files, upsert(deploymentID("team-a", "web"), deploymentYAML("team-a", "web", 3)))

	require.Equal(t, []manifest.ObjectChange{{ID: deploymentID("team-a", "web"), Path: "apps/deploy.yaml",
		Action: manifest.ActionUpdate}}, result.Objects)
	require.Len(t, result.Changes, 1, "no second file for the same object")
	removed, added := lineDiff(namespacelessDeployment, files["apps/deploy.yaml"])
	require.Equal(t, []string{"  replicas: 1\n"}, removed)
	require.Equal(t, []string{"  replicas: 3\n"}, added, "no namespace line is added")
	require.ElementsMatch(t, []string{"Deployment/web", "ClusterRole/web"}, build(t, files, "apps"))

	// The index, folded forward, still finds it, and the same state again is no change.
	path, found := ix.Lookup(deploymentID("team-a", "web"))
	require.True(t, found)
	require.Equal(t, "apps/deploy.yaml", path)
	require.Empty(t, plan(t, ix, upsert(deploymentID("team-a", "web"), deploymentYAML("team-a", "web", 3))).Changes)
}

func TestADeleteOfANamespacelessDocumentRemovesItAndItsEntry(t *testing.T) {
	files := teamFolder()
	ix := newIndex(t, "apps", files)

	result := commit(t, ix, files, manifest.Delete{ID: deploymentID("team-a", "web")})

	require.Equal(t, []manifest.ObjectChange{{ID: deploymentID("team-a", "web"), Path: "apps/deploy.yaml",
		Action: manifest.ActionDelete}}, result.Objects)
	require.NotContains(t, files, "apps/deploy.yaml")
	require.NotContains(t, files["apps/kustomization.yaml"], "deploy.yaml")
	require.Equal(t, []string{"ClusterRole/web"}, build(t, files, "apps"))
}

func TestAnUpdateInAnotherNamespaceDoesNotTouchTheNamespacelessDocument(t *testing.T) {
	files := teamFolder()
	ix := newIndex(t, "apps", files)

	result := commit(t, ix, files, upsert(deploymentID("team-b", "web"), deploymentYAML("team-b", "web", 3)))

	require.Len(t, result.Objects, 1)
	require.Equal(t, manifest.ActionCreate, result.Objects[0].Action)
	require.Equal(t, namespacelessDeployment, files["apps/deploy.yaml"])
	require.Equal(t, teamKustomization, files["apps/kustomization.yaml"],
		"a team-b object is not placed beside a kustomization that builds everything into team-a")
}

func TestAClusterScopedDocumentBesideANamespacedKustomizationIsEditedAsItIs(t *testing.T) {
	files := teamFolder()
	ix := newIndex(t, "apps", files)
	role := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: web\nrules:\n- verbs: [get]\n"

	result := commit(t, ix, files, upsert(clusterRoleID("web"), role))

	require.Equal(t, []manifest.ObjectChange{{ID: clusterRoleID("web"), Path: "apps/role.yaml",
		Action: manifest.ActionUpdate}}, result.Objects)
	require.Len(t, result.Changes, 1)
}

func TestSweepOfANamespacelessDocument(t *testing.T) {
	deployments := manifest.SweepScope{Group: "apps", Kind: "Deployment", Namespace: "team-a"}
	clusterRoles := manifest.SweepScope{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}
	gone := func(id manifest.ObjectID) []manifest.Delete {
		id.Resource = ""
		return []manifest.Delete{{ID: id}}
	}
	for _, tc := range []struct {
		name    string
		scope   manifest.SweepScope
		present []manifest.ObjectID
		want    []manifest.Delete
	}{
		{"kept while live in the kustomization's namespace", deployments, []manifest.ObjectID{deploymentID("team-a", "web")}, nil},
		{"swept when not live", deployments, nil, gone(deploymentID("team-a", "web"))},
		{"another namespace's sweep never touches it", manifest.SweepScope{Group: "apps", Kind: "Deployment", Namespace: "team-b"}, nil, nil},
		{"a live cluster-scoped object keeps its document", clusterRoles, []manifest.ObjectID{clusterRoleID("web")}, nil},
		{"a cluster-scoped object gone is swept", clusterRoles, nil, gone(clusterRoleID("web"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := newIndex(t, "apps", teamFolder())

			deletes := manifest.Sweep(ix, tc.scope, tc.present)

			require.Equal(t, tc.want, deletes)
			if len(deletes) > 0 {
				result := plan(t, ix, deletes[0])
				require.Contains(t, contents(result), map[bool]string{true: "apps/deploy.yaml", false: "apps/role.yaml"}[tc.scope.Kind == "Deployment"])
			}
		})
	}
}

func TestANewObjectBesideANamespacedKustomizationIsWrittenWithoutTheNamespace(t *testing.T) {
	files := teamFolder()
	ix := newIndex(t, "apps", files)

	result := commit(t, ix, files, upsert(deploymentID("team-a", "api"), deploymentYAML("team-a", "api", 2)))

	require.Equal(t, []manifest.ObjectChange{{ID: deploymentID("team-a", "api"), Path: "apps/team-a-deployment-api.yaml",
		Action: manifest.ActionCreate, Placement: manifest.PlacementKustomization}}, result.Objects)
	require.Equal(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 2\n",
		files["apps/team-a-deployment-api.yaml"])
	require.Contains(t, files["apps/kustomization.yaml"], "- team-a-deployment-api.yaml\n")
	require.ElementsMatch(t, []string{"Deployment/web", "Deployment/api", "ClusterRole/web"}, build(t, files, "apps"))

	// Found again by the next plan, and a delete takes it and its entry away.
	commit(t, ix, files, manifest.Delete{ID: deploymentID("team-a", "api")})
	require.NotContains(t, files, "apps/team-a-deployment-api.yaml")
	require.Equal(t, teamKustomization, files["apps/kustomization.yaml"])
}
