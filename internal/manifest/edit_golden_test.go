package manifest_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the editor tests")

// deleteField asks fieldEdit to remove the field.
type deleteField struct{}

// fieldEdit is one change to an object, as the cluster would report it: a
// field path (map keys, or sequence indexes as ints) and its new value.
type fieldEdit struct {
	path  []any
	value any
}

// desiredAfter decodes document docIndex of a corpus file, applies the
// edits and encodes it the way sanitize.Marshal does (two-space indent,
// compact sequences, sorted keys): what the planner is handed for the
// object after the change.
func desiredAfter(t *testing.T, content []byte, docIndex int, edits ...fieldEdit) (manifest.ObjectID, []byte) {
	t.Helper()
	decoder := yaml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(content, []byte("\ufeff"))))
	var obj map[string]any
	for i := 0; i <= docIndex; i++ {
		obj = nil
		require.NoError(t, decoder.Decode(&obj))
	}
	for _, e := range edits {
		setField(t, obj, e.path, e.value)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	require.NoError(t, enc.Encode(obj))
	require.NoError(t, enc.Close())
	meta := obj["metadata"].(map[string]any)
	group, version, found := strings.Cut(obj["apiVersion"].(string), "/")
	if !found {
		group, version = "", group
	}
	namespace, _ := meta["namespace"].(string)
	return manifest.ObjectID{Group: group, Version: version, Kind: obj["kind"].(string),
		Namespace: namespace, Name: meta["name"].(string)}, buf.Bytes()
}

func setField(t *testing.T, node any, path []any, value any) {
	t.Helper()
	for i, step := range path {
		last := i == len(path)-1
		switch parent := node.(type) {
		case map[string]any:
			key := step.(string)
			if !last {
				node = parent[key]
				continue
			}
			if _, remove := value.(deleteField); remove {
				delete(parent, key)
			} else {
				parent[key] = value
			}
		case []any:
			index := step.(int)
			if !last {
				node = parent[index]
				continue
			}
			parent[index] = value
		default:
			t.Fatalf("field path %v: step %d is not a map or list", path, i)
		}
	}
}

// lineDiff counts the lines only old has and only edited has, by a longest
// common subsequence of lines.
func lineDiff(old, edited string) (removed, added []string) {
	a, b := strings.SplitAfter(old, "\n"), strings.SplitAfter(edited, "\n")
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			added, j = append(added, b[j]), j+1
		default:
			removed, i = append(removed, a[i]), i+1
		}
	}
	return removed, added
}

// TestEditKeepsEverythingButTheChangedLines edits one field of a document in
// files shaped like hand-kept repositories (comments everywhere, anchors,
// flow style, several documents, CRLF, a byte order mark, long strings,
// block scalars, four-space indentation): the file's diff is exactly the
// lines of that field, and the result is the golden file.
func TestEditKeepsEverythingButTheChangedLines(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		doc     int
		edits   []fieldEdit
		removed []string
		added   []string
	}{
		{name: "replicas keeps its line comment", file: "comments.yaml",
			edits:   []fieldEdit{{[]any{"spec", "replicas"}, 5}},
			removed: []string{"  replicas: 3 # pinned for Black Friday\n"}, added: []string{"  replicas: 5 # pinned for Black Friday\n"}},
		{name: "an image in a list of containers", file: "comments.yaml",
			edits:   []fieldEdit{{[]any{"spec", "template", "spec", "containers", 0, "image"}, "nginx:1.27"}},
			removed: []string{"        image: nginx:1.25 # upgrade with care\n"}, added: []string{"        image: nginx:1.27 # upgrade with care\n"}},
		{name: "a new label goes after its predecessor", file: "comments.yaml",
			edits: []fieldEdit{{[]any{"metadata", "labels", "release"}, "stable"}},
			added: []string{"    release: stable\n"}},
		{name: "a removed annotation takes only its line", file: "comments.yaml",
			edits:   []fieldEdit{{[]any{"metadata", "annotations", "retired"}, deleteField{}}},
			removed: []string{"    retired: 'true'\n"}},
		{name: "a quoted string stays quoted", file: "comments.yaml",
			edits:   []fieldEdit{{[]any{"metadata", "annotations", "owner"}, "team-b@example.com"}},
			removed: []string{"    owner: \"team-a@example.com\"\n"}, added: []string{"    owner: \"team-b@example.com\"\n"}},
		{name: "an env value filled in", file: "comments.yaml",
			edits: []fieldEdit{{[]any{"spec", "template", "spec", "containers", 0, "env", 1},
				map[string]any{"name": "EMPTY", "value": "now set"}}},
			added: []string{"          value: now set\n"}},
		{name: "a field beside anchors and a merge key", file: "anchors.yaml",
			edits:   []fieldEdit{{[]any{"data", "other"}, "changed"}},
			removed: []string{"  other: plain\n"}, added: []string{"  other: changed\n"}},
		{name: "a flow sequence stays flow", file: "flow.yaml",
			edits:   []fieldEdit{{[]any{"spec", "template", "spec", "containers", 0, "args"}, []any{"--port", "9090", "--verbose"}}},
			removed: []string{"      - {name: app, image: \"app:1\", args: [--port, \"8080\", --verbose]}\n"},
			added:   []string{"      - {name: app, image: \"app:1\", args: [--port, \"9090\", --verbose]}\n"}},
		{name: "flow metadata gets a label", file: "flow.yaml",
			edits:   []fieldEdit{{[]any{"metadata", "labels", "tier"}, "web"}},
			removed: []string{"metadata: {name: flow, namespace: shop, labels: {app: flow}}\n"},
			added:   []string{"metadata: {name: flow, namespace: shop, labels: {app: flow, tier: web}}\n"}},
		{name: "the middle document of three", file: "multidoc.yaml", doc: 1,
			edits:   []fieldEdit{{[]any{"data", "key"}, "2"}},
			removed: []string{"  key: two\n"}, added: []string{"  key: \"2\"\n"}},
		{name: "the last document, before its end marker", file: "multidoc.yaml", doc: 2,
			edits:   []fieldEdit{{[]any{"data", "key"}, "drei"}},
			removed: []string{"  key: three\n"}, added: []string{"  key: drei\n"}},
		{name: "CRLF line endings", file: "crlf.yaml",
			edits:   []fieldEdit{{[]any{"spec", "replicas"}, 2}, {[]any{"spec", "minReadySeconds"}, 10}},
			removed: []string{"  replicas: 1 # one\r\n"}, added: []string{"  minReadySeconds: 10\r\n", "  replicas: 2 # one\r\n"}},
		{name: "a byte order mark", file: "bom.yaml",
			edits:   []fieldEdit{{[]any{"spec", "replicas"}, 4}},
			removed: []string{"  replicas: 1\n"}, added: []string{"  replicas: 4\n"}},
		{name: "a long double-quoted string", file: "longstrings.yaml",
			edits:   []fieldEdit{{[]any{"data", "quoted"}, "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis"}},
			removed: []string{"  quoted: \"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam\"\n"},
			added:   []string{"  quoted: \"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis\"\n"}},
		{name: "single quotes, an IP and a multi-line plain scalar stay", file: "longstrings.yaml",
			edits:   []fieldEdit{{[]any{"data", "single"}, "it's still single"}},
			removed: []string{"  single: 'it''s single quoted'\n"}, added: []string{"  single: 'it''s still single'\n"}},
		{name: "one line inside a literal block", file: "blockscalars.yaml",
			edits:   []fieldEdit{{[]any{"data", "nginx.conf"}, "server {\n  listen 8080;\n  root /srv;\n}\n"}},
			removed: []string{"      listen 80;\n"}, added: []string{"      listen 8080;\n"}},
		{name: "a value after the block scalars", file: "blockscalars.yaml",
			edits:   []fieldEdit{{[]any{"data", "after"}, "changed"}},
			removed: []string{"  after: value # after the blocks\n"}, added: []string{"  after: changed # after the blocks\n"}},
		{name: "four-space indentation is followed", file: "indent4.yaml",
			edits: []fieldEdit{{[]any{"metadata", "labels", "tier"}, "web"}},
			added: []string{"        tier: web\n"}},
		{name: "an indented sequence item", file: "indent4.yaml",
			edits:   []fieldEdit{{[]any{"spec", "template", "spec", "containers", 0, "image"}, "app:2"}},
			removed: []string{"                  image: app:1\n"}, added: []string{"                  image: app:2\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			original, err := os.ReadFile(filepath.Join("testdata", "edit", tt.file))
			require.NoError(t, err)
			id, desired := desiredAfter(t, original, tt.doc, tt.edits...)
			ix, err := manifest.NewIndex(".", map[string][]byte{"README.md": nil, tt.file: original})
			require.NoError(t, err)

			result, err := manifest.Plan(ix, []manifest.Op{manifest.Upsert{ID: id, YAML: desired}})
			require.NoError(t, err)
			require.Empty(t, result.Refusals)
			require.Len(t, result.Changes, 1)
			edited := string(result.Changes[0].Content)

			removed, added := lineDiff(string(original), edited)
			require.Equal(t, tt.removed, removed, "lines removed")
			require.Equal(t, tt.added, added, "lines added")
			golden := filepath.Join("testdata", "edit", goldenName(tt.name))
			if *updateGolden {
				require.NoError(t, os.WriteFile(golden, []byte(edited), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), edited)
		})
	}
}

// goldenName is a test's golden file: its name in lower case, with a dash
// for every run of other characters.
func goldenName(test string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(test) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-") + ".golden"
}
