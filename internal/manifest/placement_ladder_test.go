package manifest_test

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

const handKeptKustomization = `# Team A's apps.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
# the app itself
- app.yaml   # keep first
images:
- name: nginx
  newTag: "1.27"
`

// build runs kustomize over dir of files (a path → content map), as
// `kubectl kustomize dir` would, and returns the names of what it renders.
func build(t *testing.T, files map[string]string, dir string) []string {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for p, content := range files {
		require.NoError(t, fs.MkdirAll(path.Dir("/"+p)))
		require.NoError(t, fs.WriteFile("/"+p, []byte(content)))
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/"+dir)
	require.NoError(t, err)
	var names []string
	for _, r := range resources.Resources() {
		names = append(names, r.GetKind()+"/"+r.GetName())
	}
	return names
}

// commit plans ops, checks the plan and folds it into files and the index.
func commit(t *testing.T, ix *manifest.Index, files map[string]string, ops ...manifest.Op) manifest.Result {
	t.Helper()
	result := plan(t, ix, ops...)
	require.Empty(t, result.Refusals)
	for _, c := range result.Changes {
		if c.Delete {
			delete(files, c.Path)
		} else {
			files[c.Path] = string(c.Content)
		}
	}
	require.NoError(t, ix.Apply(result))
	return result
}

func TestANewObjectGoesBesideTheOneKustomizationAndIsListed(t *testing.T) {
	files := withReadme("apps", map[string]string{
		"apps/kustomization.yaml": handKeptKustomization,
		"apps/app.yaml":           configMapYAML("team-a", "app", "1"),
	})
	ix := newIndex(t, "apps", files)

	result := commit(t, ix, files, upsert(configMapID("team-a", "web"), configMapYAML("team-a", "web", "1")))

	require.Equal(t, []manifest.ObjectChange{{ID: configMapID("team-a", "web"), Path: "apps/team-a-configmap-web.yaml",
		Action: manifest.ActionCreate, Placement: manifest.PlacementKustomization}}, result.Objects)
	removed, added := lineDiff(handKeptKustomization, files["apps/kustomization.yaml"])
	require.Empty(t, removed, "the kustomization keeps every line")
	require.Equal(t, []string{"- team-a-configmap-web.yaml\n"}, added)
	require.ElementsMatch(t, []string{"ConfigMap/app", "ConfigMap/web"}, build(t, files, "apps"))

	// A second commit lists its file too, and a delete takes the entry away.
	commit(t, ix, files, manifest.Upsert{ID: secretID("team-a", "db"), YAML: []byte(encryptedSecretYAML("team-a", "db", "c1")), Sensitive: true})
	require.Contains(t, files["apps/kustomization.yaml"], "- team-a-secret-db.sops.yaml\n")
	commit(t, ix, files, manifest.Delete{ID: configMapID("team-a", "web")})
	require.NotContains(t, files, "apps/team-a-configmap-web.yaml")
	require.NotContains(t, files["apps/kustomization.yaml"], "team-a-configmap-web.yaml")
	require.True(t, strings.HasPrefix(files["apps/kustomization.yaml"], handKeptKustomization[:strings.Index(handKeptKustomization, "images:")]))
}

func TestAKustomizationWithoutResourcesGetsTheList(t *testing.T) {
	files := withReadme(".", map[string]string{
		"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a # all of it\n",
	})
	ix := newIndex(t, ".", files)

	commit(t, ix, files, upsert(configMapID("team-a", "web"), configMapYAML("team-a", "web", "1")))

	require.Equal(t, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: team-a # all of it\n"+
		"resources:\n- team-a-configmap-web.yaml\n", files["base/kustomization.yaml"])
	require.Contains(t, files, "base/team-a-configmap-web.yaml")
	require.Equal(t, []string{"ConfigMap/web"}, build(t, files, "base"))
}

// TestAnEmptyFlowResourcesListKeepsItsComment: "resources: [] # note"
// becomes "resources: [file] # note", the comment once.
func TestAnEmptyFlowResourcesListKeepsItsComment(t *testing.T) {
	files := withReadme(".", map[string]string{"kustomization.yaml": "kind: Kustomization\nresources: [] # filled by the operator\n"})
	ix := newIndex(t, ".", files)

	commit(t, ix, files, upsert(configMapID("team-a", "web"), configMapYAML("team-a", "web", "1")))

	require.Equal(t, "kind: Kustomization\nresources: [team-a-configmap-web.yaml] # filled by the operator\n", files["kustomization.yaml"])
}

func TestThePlacementLadder(t *testing.T) {
	web := configMapID("team-a", "web")
	tests := []struct {
		name      string
		files     map[string]string
		placement manifest.Placement
		wantPath  string
		wantFrom  manifest.PlacementSource
	}{
		{"declared placement comes first", map[string]string{"kustomization.yaml": kustomizationHeader},
			manifest.Placement{Default: "{namespace}/{name}.yaml"}, "team-a/web.yaml", manifest.PlacementDeclared},
		{"then the one kustomization", map[string]string{"kustomization.yaml": kustomizationHeader},
			manifest.Placement{}, "team-a-configmap-web.yaml", manifest.PlacementKustomization},
		{"two kustomize roots are ambiguous", map[string]string{"a/kustomization.yaml": kustomizationHeader, "b/kustomization.yaml": kustomizationHeader},
			manifest.Placement{}, "team-a/configmaps/web.yaml", manifest.PlacementCanonical},
		{"a kustomization another one reads is not a root", map[string]string{
			"kustomization.yaml":      "resources:\n- apps\n- infra/\n",
			"apps/kustomization.yaml": kustomizationHeader, "infra/kustomization.yml": kustomizationHeader},
			manifest.Placement{}, "team-a-configmap-web.yaml", manifest.PlacementKustomization},
		{"the one root may sit in a folder", map[string]string{"apps/kustomization.yaml": kustomizationHeader},
			manifest.Placement{}, "apps/team-a-configmap-web.yaml", manifest.PlacementKustomization},
		{"no kustomization: canonical", map[string]string{},
			manifest.Placement{}, "team-a/configmaps/web.yaml", manifest.PlacementCanonical},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			contents := map[string][]byte{"README.md": nil}
			for p, c := range tt.files {
				contents[p] = []byte(c)
			}
			ix, err := manifest.NewIndex(".", contents)
			require.NoError(t, err)
			result, err := manifest.Planner{Placement: tt.placement}.Plan(ix, []manifest.Op{upsert(web, configMapYAML("team-a", "web", "1"))})
			require.NoError(t, err)
			require.Equal(t, []manifest.ObjectChange{{ID: web, Path: tt.wantPath, Action: manifest.ActionCreate, Placement: tt.wantFrom}}, result.Objects)
		})
	}
}
