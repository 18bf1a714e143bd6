package sanitize

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	k8syaml "sigs.k8s.io/yaml"
)

// TestWriteBlockMatchesYAMLv3OnRepositoryFixtures renders every object the
// repository holds as a fixture with the block writer and with yaml.v3, as it is
// and as Sanitize projects it: the YAML and JSON files (testdata, the
// chart's CRDs and values, the audit events), the YAML and JSON string
// literals of every test file (e2e, bench, unit objects), and the YAML
// blocks of the documentation.
func TestWriteBlockMatchesYAMLv3OnRepositoryFixtures(t *testing.T) {
	root := repositoryRoot(t)
	var docs [][]byte
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		switch ext := filepath.Ext(path); {
		case ext == ".yaml" || ext == ".yml" || ext == ".json" || ext == ".golden":
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			docs = append(docs, raw)
		case ext == ".md":
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			docs = append(docs, markdownYAMLBlocks(raw)...)
		case strings.HasSuffix(path, "_test.go"):
			docs = append(docs, goStringLiterals(t, path)...)
		}
		return nil
	}))

	objects, rendered := 0, 0
	for _, raw := range docs {
		for _, obj := range yamlObjects(raw) {
			for _, variant := range []map[string]interface{}{obj, sanitized(obj)} {
				if variant == nil {
					continue
				}
				objects++
				if requireSameAsYAMLv3(t, objectTree(t, variant), string(raw[:min(len(raw), 200)])) {
					rendered++
				}
			}
		}
	}
	t.Logf("%d objects from %d documents; the block writer wrote %d, yaml.v3 the rest", objects, len(docs), rendered)
	require.Greater(t, objects, 500, "the walk found the repository's fixtures")
	require.Greater(t, rendered*100, objects*95, "the block writer writes nearly every fixture itself")
}

func repositoryRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the package")
		dir = parent
	}
}

// markdownYAMLBlocks returns the fenced yaml and json blocks of a page.
func markdownYAMLBlocks(raw []byte) [][]byte {
	var blocks [][]byte
	var current *bytes.Buffer
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case current == nil && (trimmed == "```yaml" || trimmed == "```yml" || trimmed == "```json"):
			current = new(bytes.Buffer)
		case current != nil && trimmed == "```":
			blocks = append(blocks, current.Bytes())
			current = nil
		case current != nil:
			current.WriteString(line + "\n")
		}
	}
	return blocks
}

// goStringLiterals returns the string literals of a Go file that look like
// a YAML or JSON object.
func goStringLiterals(t *testing.T, path string) [][]byte {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	var out [][]byte
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err == nil && (strings.Contains(s, ": ") || strings.Contains(s, `":`)) {
			out = append(out, []byte(s))
		}
		return true
	})
	return out
}

// yamlObjects decodes each document of raw that is a mapping into the
// values unstructured content holds (int64, float64, string, bool, nil,
// maps and slices). Documents that are not valid YAML are skipped.
func yamlObjects(raw []byte) []map[string]interface{} {
	var out []map[string]interface{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) || err != nil {
			return out
		}
		single, err := yaml.Marshal(&doc)
		if err != nil {
			continue
		}
		asJSON, err := k8syaml.YAMLToJSON(single)
		if err != nil {
			continue
		}
		var obj map[string]interface{}
		if utiljson.Unmarshal(asJSON, &obj) == nil && len(obj) > 0 {
			out = append(out, obj)
		}
	}
}

// sanitized is obj as Sanitize projects it, or nil for a non-object.
func sanitized(obj map[string]interface{}) map[string]interface{} {
	if _, ok := obj["kind"].(string); !ok {
		return nil
	}
	if _, ok := obj["metadata"].(map[string]interface{}); !ok {
		return nil
	}
	return Sanitize(&unstructured.Unstructured{Object: obj}).Object
}
