package manifest_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

const kustomizationHeader = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- app.yaml\n"

// TestTheGateRefusesEveryUnsupportedKustomizeFeature: a kustomization using
// a feature whose output the operator cannot invert refuses the whole
// subtree, naming the file and the feature; nothing is planned.
func TestTheGateRefusesEveryUnsupportedKustomizeFeature(t *testing.T) {
	tests := []struct {
		name, kustomization, feature string
	}{
		{"configMapGenerator", "configMapGenerator:\n- name: settings\n  literals: [a=b]\n", "generators (configMapGenerator)"},
		{"secretGenerator", "secretGenerator:\n- name: creds\n  literals: [a=b]\n", "generators (secretGenerator)"},
		{"generator plugins", "generators:\n- gen.yaml\n", "generators (generators)"},
		{"an inline patch", "patches:\n- patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 3\n  target:\n    kind: Deployment\n", "inline patches (patches: patch)"},
		{"a JSON6902 patch from a file", "patches:\n- path: replicas.json\n  target:\n    kind: Deployment\n    name: web\n", "JSON6902 or targeted patches (patches: path replicas.json with a target)"},
		{"patchesJson6902", "patchesJson6902:\n- path: p.yaml\n  target:\n    kind: Deployment\n    name: web\n    version: v1\n    group: apps\n", "JSON6902 patches (patchesJson6902)"},
		{"an inline strategic-merge patch", "patchesStrategicMerge:\n- |-\n  apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: web\n", "inline patches (patchesStrategicMerge)"},
		{"components", "components:\n- ../components/tls\n", "components (components)"},
		{"helm charts", "helmCharts:\n- name: redis\n  repo: https://charts.example.com\n  version: 1.0.0\n", "helm charts (helmCharts)"},
		{"replacements", "replacements:\n- source:\n    kind: ConfigMap\n    name: a\n  targets: []\n", "replacements (replacements)"},
		{"vars", "vars:\n- name: HOST\n  objref:\n    kind: Service\n    name: web\n    apiVersion: v1\n", "replacements (vars)"},
		{"transformers", "transformers:\n- labels.yaml\n", "transformers (transformers)"},
		{"namePrefix", "namePrefix: prod-\n", "name prefix (namePrefix)"},
		{"nameSuffix", "nameSuffix: -v2\n", "name suffix (nameSuffix)"},
		{"a remote base over https", "resources:\n- https://github.com/org/repo//deploy?ref=v1\n", "remote bases (resources: https://github.com/org/repo//deploy?ref=v1)"},
		{"a remote base without a scheme", "resources:\n- github.com/org/repo/deploy\n", "remote bases (resources: github.com/org/repo/deploy)"},
		{"an image without a name", "images:\n- newTag: v2\n", "malformed images: entry 1 has no name"},
		{"an image that sets nothing", "images:\n- name: nginx\n", `malformed images: entry "nginx" sets nothing`},
		{"a replicas entry without a name", "replicas:\n- count: 2\n", "malformed replicas: entry 1 has no name"},
		{"a negative replica count", "replicas:\n- name: web\n  count: -1\n", `malformed replicas: entry "web" has a negative count`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newIndex(t, "apps", withReadme("apps", map[string]string{
				"apps/kustomization.yaml": kustomizationHeader + tt.kustomization,
				"apps/app.yaml":           configMapYAML("team-a", "app", "1"),
			}))

			_, err := manifest.Plan(ix, []manifest.Op{upsert(configMapID("team-a", "app"), configMapYAML("team-a", "app", "2"))})

			var unsupported *manifest.UnsupportedContentError
			require.True(t, errors.As(err, &unsupported), "want the gate's refusal, got %v", err)
			require.Contains(t, unsupported.Problems, manifest.Problem{
				Path: "apps/kustomization.yaml", Reason: manifest.ReasonUnsupportedKustomization, Detail: tt.feature,
			})
			require.Contains(t, err.Error(), "apps/kustomization.yaml")
		})
	}
}

// TestTheGateAcceptsWhatItOnlyReads: path-based strategic-merge patches,
// a base outside the subtree, and well-formed images:/replicas: entries are
// read as context, and the subtree is written.
func TestTheGateAcceptsWhatItOnlyReads(t *testing.T) {
	tests := []struct {
		name, kustomization string
	}{
		{"a plain kustomization", ""},
		{"a strategic-merge patch by path", "patches:\n- path: patch.yaml\n"},
		{"patchesStrategicMerge by path", "patchesStrategicMerge:\n- patch.yaml\n"},
		{"an overlay of ../../base", "resources:\n- ../../base\n"},
		{"well-formed images and replicas", "images:\n- name: nginx\n  newTag: \"1.27\"\n- name: app\n  newName: registry.example.com/app\n  digest: sha256:0123\nreplicas:\n- name: web\n  count: 3\n"},
		{"labels, annotations and a namespace", "namespace: team-a\nlabels:\n- pairs:\n    tier: web\ncommonAnnotations:\n  owner: a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newIndex(t, "apps", withReadme("apps", map[string]string{
				"apps/kustomization.yaml": kustomizationHeader + tt.kustomization,
				"apps/app.yaml":           configMapYAML("team-a", "app", "1"),
			}))
			require.NoError(t, ix.Check())
			result := plan(t, ix, upsert(configMapID("team-a", "app"), configMapYAML("team-a", "app", "2")))
			require.Len(t, result.Changes, 1)
		})
	}
}

// TestTheGateReadsEveryKustomizationFileName: Kustomization and
// kustomization.yml are kustomizations too, and one that is not valid is
// refused as unreadable.
func TestTheGateReadsEveryKustomizationFileName(t *testing.T) {
	for _, name := range []string{"kustomization.yml", "Kustomization", "nested/kustomization.yaml"} {
		t.Run(name, func(t *testing.T) {
			ix := newIndex(t, ".", withReadme(".", map[string]string{name: kustomizationHeader + "namePrefix: x-\n"}))
			err := ix.Check()
			var unsupported *manifest.UnsupportedContentError
			require.True(t, errors.As(err, &unsupported))
			require.Equal(t, []string{name}, unsupported.Paths())
		})
	}
	ix := newIndex(t, ".", withReadme(".", map[string]string{"kustomization.yaml": kustomizationHeader + "resourcez:\n- a.yaml\n"}))
	err := ix.Check()
	require.ErrorContains(t, err, "kustomization.yaml: UnsupportedKustomization: not a kustomization the operator can read")
}
