package manifest

import (
	"fmt"
	"runtime"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestALoadParsedInParallelIsTheOneParsedInOrder: an index that parses its
// files on several goroutines (more than minParallelParses of them) holds
// exactly what adding the files one by one in path order gives: the same
// documents, duplicates, problems in the same order, and parse count.
func TestALoadParsedInParallelIsTheOneParsedInOrder(t *testing.T) {
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	files := map[string][]byte{}
	rendered := map[string]ObjectID{}
	for i := range 4 * minParallelParses {
		p := fmt.Sprintf("apps/ns-%d/configmaps/cm-%04d.yaml", i%7, i)
		body := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\n  namespace: ns-%d\ndata:\n  k: v\n", i, i%7)
		switch i % 9 {
		case 1:
			body = "apiVersion: v1\nkind: ConfigMap\nmetadata: [not, a, mapping]\n"
		case 2:
			body = "key: [unclosed\n"
		case 3:
			body += "---\n" + fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s-%04d\n", i) + "---\n# only a comment\n"
		case 4: // a duplicate of another file's object
			body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-0000\n  namespace: ns-0\n"
		case 5:
			rendered[p] = ObjectID{Version: "v1", Kind: "ConfigMap", Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("cm-%04d", i)}
		}
		files[p] = []byte(body)
	}
	files["apps/kustomization.yaml"] = []byte("resources: []\n")
	files["apps/README.md"] = []byte("# apps\n")
	files["apps/.sops.yaml"] = []byte("creation_rules: []\n")

	parallel, err := NewIndexRendered("apps", files, rendered)
	require.NoError(t, err)

	inOrder, err := NewIndexRendered("apps", nil, nil)
	require.NoError(t, err)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		var parsed *manifestFile
		if id, ok := rendered[p]; ok {
			parsed = renderedFile(files[p], id)
		}
		require.NoError(t, inOrder.add(p, files[p], parsed))
	}

	require.Equal(t, inOrder.parses, parallel.parses)
	require.Equal(t, inOrder.problems, parallel.problems)
	require.Equal(t, inOrder.byID, parallel.byID)
	require.Equal(t, inOrder.others, parallel.others)
	require.Equal(t, inOrder.manifests, parallel.manifests)
	require.Equal(t, inOrder.Check(), parallel.Check())
	require.NotEmpty(t, parallel.problems, "the fixture has problems to compare")
	require.NotNil(t, inOrder.parseAll(paths, files, nil), "the load parses on several goroutines")
}
