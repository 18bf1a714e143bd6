package docs

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestPageManifestsAreAcceptedByTheAPI creates every manifest of the
// encryption, signing and CRD pages (yaml documents with an apiVersion and
// a kind) as a server-side dry run with strict field validation, as the
// quickstart test does: a field the CRDs do not have, or a value they
// refuse, fails. A block marked <!-- refused --> shows what the API server
// refuses, and must be refused.
func TestPageManifestsAreAcceptedByTheAPI(t *testing.T) {
	root := harness.RepoRoot()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "crds", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	pages = append(pages, filepath.Join(root, "docs", "encryption.md"), filepath.Join(root, "docs", "signing.md"))

	for _, path := range pages {
		rel, err := filepath.Rel(root, path)
		require.NoError(t, err)
		t.Run(rel, func(t *testing.T) {
			p := readPage(t, path)
			accepted, refused := p.objects(t), p.refusedObjects(t)
			require.NotEmpty(t, append(accepted, refused...), "the page shows no manifest")
			for _, obj := range accepted {
				require.NoError(t, dryRunCreate(t, kube.Client(), obj), "%s %s", obj.GetKind(), obj.GetName())
			}
			for _, obj := range refused {
				err := dryRunCreate(t, kube.Client(), obj)
				require.Error(t, err, "%s %s is marked %s but the API server accepts it", obj.GetKind(), obj.GetName(), refusedMarker)
				require.True(t, apierrors.IsBadRequest(err) || apierrors.IsInvalid(err), "%s %s is refused for its content, not: %v", obj.GetKind(), obj.GetName(), err)
			}
		})
	}
}
