package manifest_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const overrideKustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deploy.yaml
replicas:
- name: web
  count: 3 # production size
images:
- name: nginx
  newTag: "1.27" # pinned by the platform team
`

const overriddenDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 1 # overridden in kustomization.yaml
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.25
`

// live is the Deployment as the cluster has it: what the build renders
// with the given replicas and image.
func live(replicas int, image, extraLabel string) string {
	labels := ""
	if extraLabel != "" {
		labels = "  labels:\n    tier: " + extraLabel + "\n"
	}
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n" + labels + "  name: web\n  namespace: shop\nspec:\n" +
		"  replicas: " + strconv.Itoa(replicas) + "\n  template:\n    spec:\n      containers:\n" +
		"      - image: " + image + "\n        name: web\n"
}

// renders builds the folder with kustomize and returns the Deployment's
// replicas and image lines.
func renders(t *testing.T, files map[string]string) string {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for p, content := range files {
		require.NoError(t, fs.WriteFile("/"+p, []byte(content)))
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/")
	require.NoError(t, err)
	out, err := resources.AsYaml()
	require.NoError(t, err)
	return string(out)
}

func TestALiveValueAnOverrideProducesIsWrittenToTheOverride(t *testing.T) {
	tests := []struct {
		name                  string
		live                  string
		kustomization, source string // the files after the commit
	}{
		{"a replay of what the build renders changes nothing", live(3, "nginx:1.27", ""),
			overrideKustomization, overriddenDeployment},
		{"a scale goes to the replicas: entry", live(5, "nginx:1.27", ""),
			strings.Replace(overrideKustomization, "count: 3 #", "count: 5 #", 1), overriddenDeployment},
		{"a new tag goes to the images: entry, quoted as it was", live(3, "nginx:1.28", ""),
			strings.Replace(overrideKustomization, `newTag: "1.27"`, `newTag: "1.28"`, 1), overriddenDeployment},
		{"an image the entry cannot express patches the source", live(3, "mirror.example.com/nginx:1.28", ""),
			overrideKustomization, strings.Replace(overriddenDeployment, "image: nginx:1.25", "image: mirror.example.com/nginx:1.28", 1)},
		{"another field still edits the source", live(5, "nginx:1.27", "web"),
			strings.Replace(overrideKustomization, "count: 3 #", "count: 5 #", 1),
			strings.Replace(overriddenDeployment, "metadata:\n", "metadata:\n  labels:\n    tier: web\n", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := withReadme(".", map[string]string{"kustomization.yaml": overrideKustomization, "deploy.yaml": overriddenDeployment})
			ix := newIndex(t, ".", files)

			commit(t, ix, files, upsert(deploymentID("shop", "web"), tt.live))

			require.Equal(t, tt.kustomization, files["kustomization.yaml"])
			require.Equal(t, tt.source, files["deploy.yaml"])
			delete(files, "README.md")
			built := renders(t, files)
			require.Contains(t, built, strings.Split(strings.Split(tt.live, "replicas: ")[1], "\n")[0], "the build renders the live replicas")
			require.Contains(t, built, "image: "+strings.Split(strings.Split(tt.live, "image: ")[1], "\n")[0], "the build renders the live image")
		})
	}
}

func TestAnOverrideOnlyGovernsTheFilesItsKustomizationLists(t *testing.T) {
	files := withReadme(".", map[string]string{
		"kustomization.yaml": strings.Replace(overrideKustomization, "- deploy.yaml", "- other.yaml", 1),
		"other.yaml":         configMapYAML("shop", "other", "1"),
		"deploy.yaml":        overriddenDeployment,
	})
	ix := newIndex(t, ".", files)

	result := plan(t, ix, upsert(deploymentID("shop", "web"), live(5, "nginx:1.27", "")))

	require.Equal(t, map[string]string{"deploy.yaml": strings.NewReplacer("replicas: 1 #", "replicas: 5 #", "image: nginx:1.25", "image: nginx:1.27").Replace(overriddenDeployment)},
		contents(result))
}
