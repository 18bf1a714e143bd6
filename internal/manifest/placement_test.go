package manifest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// declared is a policy with a ConfigMap template and a bundling default.
var declared = manifest.Placement{
	ByType:  map[string]string{"v1/configmaps": "{namespace}/config/{name}.yaml"},
	Default: "{namespace}/{resource}.yaml",
}

func planWith(t *testing.T, placement manifest.Placement, ix *manifest.Index, ops ...manifest.Op) manifest.Result {
	t.Helper()
	result, err := manifest.Planner{Placement: placement}.Plan(ix, ops)
	require.NoError(t, err)
	return result
}

func TestPlacementChoosesTheTemplateOfANewObject(t *testing.T) {
	cm := configMapYAML("team-a", "app", "v")
	deploy := deploymentYAML("team-a", "api", 1)
	tests := []struct {
		name      string
		placement manifest.Placement
		want      map[string]string
	}{
		{"byType, then default", declared, map[string]string{
			"root/team-a/config/app.yaml":  cm,
			"root/team-a/deployments.yaml": deploy,
		}},
		{"byType only: others canonical", manifest.Placement{ByType: declared.ByType}, map[string]string{
			"root/team-a/config/app.yaml":           cm,
			"root/team-a/apps/deployments/api.yaml": deploy,
		}},
		{"byType must match the version", manifest.Placement{ByType: map[string]string{"apps/v1beta1/deployments": "x.yaml"}},
			map[string]string{
				"root/team-a/configmaps/app.yaml":       cm,
				"root/team-a/apps/deployments/api.yaml": deploy,
			}},
		{"no policy: canonical", manifest.Placement{}, map[string]string{
			"root/team-a/configmaps/app.yaml":       cm,
			"root/team-a/apps/deployments/api.yaml": deploy,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newIndex(t, "root", withReadme("root", nil))
			result := planWith(t, tt.placement, ix,
				upsert(configMapID("team-a", "app"), cm), upsert(deploymentID("team-a", "api"), deploy))
			require.Empty(t, result.Refusals)
			require.Equal(t, tt.want, contents(result))
		})
	}
}

func TestPlacementNeverMovesAnExistingDocument(t *testing.T) {
	old := configMapYAML("team-a", "app", "old")
	ix := newIndex(t, "root", withReadme("root", map[string]string{"root/team-a/configmaps/app.yaml": old}))
	updated := configMapYAML("team-a", "app", "new")

	result := planWith(t, declared, ix, upsert(configMapID("team-a", "app"), updated))

	require.Empty(t, result.Refusals)
	require.Equal(t, map[string]string{"root/team-a/configmaps/app.yaml": updated}, contents(result))
	require.Equal(t, []manifest.ObjectChange{{ID: configMapID("team-a", "app"), Path: "root/team-a/configmaps/app.yaml",
		Action: manifest.ActionUpdate}}, result.Objects)
}

func TestPlacementBundlesObjectsIntoOneMultiDocumentFile(t *testing.T) {
	bundling := manifest.Placement{Default: "{namespace}/all.yaml"}
	a, b := configMapYAML("team-a", "a", "1"), configMapYAML("team-a", "b", "2")
	ix := newIndex(t, "root", withReadme("root", nil))

	result := planWith(t, bundling, ix, upsert(configMapID("team-a", "b"), b), upsert(configMapID("team-a", "a"), a))

	require.Empty(t, result.Refusals)
	// Planned by identity, so the file's order does not depend on the batch's.
	require.Equal(t, map[string]string{"root/team-a/all.yaml": a + "---\n" + b}, contents(result))

	// The next commit edits one document in place and appends a new one.
	require.NoError(t, ix.Apply(result))
	c, changedA := configMapYAML("team-a", "c", "3"), configMapYAML("team-a", "a", "changed")
	result = planWith(t, bundling, ix, upsert(configMapID("team-a", "a"), changedA), upsert(configMapID("team-a", "c"), c))
	require.Empty(t, result.Refusals)
	require.Equal(t, map[string]string{"root/team-a/all.yaml": changedA + "---\n" + b + "---\n" + c}, contents(result))

	// Deleting one leaves the others.
	require.NoError(t, ix.Apply(result))
	result = planWith(t, bundling, ix, manifest.Delete{ID: configMapID("team-a", "b")})
	require.Equal(t, map[string]string{"root/team-a/all.yaml": changedA + "---\n" + c}, contents(result))
}

func TestPlacementNeverSharesASensitiveFile(t *testing.T) {
	bundling := manifest.Placement{Default: "{namespace}/all.yaml"}
	secret := encryptedSecretYAML("team-a", "db", "c1")
	t.Run("with a plaintext object of the same commit", func(t *testing.T) {
		ix := newIndex(t, "root", withReadme("root", nil))
		result := planWith(t, bundling, ix,
			upsert(configMapID("team-a", "app"), configMapYAML("team-a", "app", "v")),
			manifest.Upsert{ID: secretID("team-a", "db"), YAML: []byte(secret), Sensitive: true},
			manifest.Upsert{ID: secretID("team-a", "other"), YAML: []byte(encryptedSecretYAML("team-a", "other", "c2")), Sensitive: true})
		// The suffix makes the secrets' file all.sops.yaml: the first takes
		// it alone, the second would share it.
		require.Equal(t, map[string]manifest.RefusalReason{"other": manifest.RefusalSensitiveShared}, refusalReasons(result))
		require.Equal(t, map[string]string{
			"root/team-a/all.yaml":      configMapYAML("team-a", "app", "v"),
			"root/team-a/all.sops.yaml": secret,
		}, contents(result))
	})
	t.Run("with an existing file", func(t *testing.T) {
		ix := newIndex(t, "root", withReadme("root", map[string]string{
			"root/team-a/all.sops.yaml": encryptedSecretYAML("team-a", "first", "c0"),
		}))
		result := planWith(t, bundling, ix, manifest.Upsert{ID: secretID("team-a", "db"), YAML: []byte(secret), Sensitive: true})
		require.Equal(t, map[string]manifest.RefusalReason{"db": manifest.RefusalSensitiveShared}, refusalReasons(result))
		require.Empty(t, result.Changes)
	})
}

func TestPlacementRefusesABadRenderAndWritesNothingElsewhere(t *testing.T) {
	ix := newIndex(t, "root", withReadme("root", nil))
	placement := manifest.Placement{ByType: map[string]string{"v1/configmaps": "{name}/../{bogus}.yaml"}}

	result := planWith(t, placement, ix,
		upsert(configMapID("team-a", "app"), configMapYAML("team-a", "app", "v")),
		upsert(deploymentID("team-a", "api"), deploymentYAML("team-a", "api", 1)))

	require.Equal(t, map[string]manifest.RefusalReason{"app": manifest.RefusalInvalidPlacement}, refusalReasons(result))
	require.Equal(t, []string{"root/team-a/apps/deployments/api.yaml"}, changedPaths(result))
}

func TestPlacementIntoAnAuxiliaryFileIsRefused(t *testing.T) {
	ix := newIndex(t, "root", withReadme("root", nil))
	placement := manifest.Placement{Default: "{namespace}/kustomization.yaml"}

	result := planWith(t, placement, ix, upsert(configMapID("team-a", "app"), configMapYAML("team-a", "app", "v")))

	require.Equal(t, map[string]manifest.RefusalReason{"app": manifest.RefusalAuxiliaryPath}, refusalReasons(result))
	require.Empty(t, result.Changes)
}
