package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// FuzzEditDocument edits every document of an arbitrary file (a label set
// to the fuzzed value): the planner either refuses, or every other
// document's bytes stay exactly as they were, the edited one reads as the
// desired object, and the file indexes without a problem. `go test` runs
// only the seeds; `go test -fuzz FuzzEditDocument` searches.
func FuzzEditDocument(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "edit", "*.yaml"))
	require.NoError(f, err)
	for _, seed := range seeds {
		content, err := os.ReadFile(seed)
		require.NoError(f, err)
		f.Add(content, "fuzzed")
	}
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# b\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels:\n    x: \"1\"\n"), "on")
	f.Fuzz(func(t *testing.T, content []byte, label string) {
		ix, err := NewIndex(".", map[string][]byte{"README.md": nil, "f.yaml": content})
		if err != nil || ix.Check() != nil {
			return // refused as a whole
		}
		original := ix.manifests["f.yaml"]
		for k, doc := range original.docs {
			if doc == nil || doc.encrypted {
				continue
			}
			body := original.content[original.sections[k].Body:original.sections[k].End]
			for _, change := range []func(map[string]any) bool{withLabel(label), withoutAField} {
				desired, ok := changed(body, change)
				if !ok {
					continue
				}
				result, err := Plan(ix, []Op{Upsert{ID: doc.id, YAML: desired}})
				require.NoError(t, err)
				if len(result.Refusals) > 0 || len(result.Changes) == 0 {
					continue
				}
				require.Len(t, result.Changes, 1, "one file changes")
				checkEdit(t, original, k, result.Changes[0].Content, desired)
			}
		}
	})
}

// checkEdit asserts that edited differs from original only in section k,
// which reads as desired.
func checkEdit(t *testing.T, original *manifestFile, k int, edited, desired []byte) {
	t.Helper()
	sections := yamledit.Sections(edited)
	require.Len(t, sections, len(original.sections), "the edit added or lost a '---' marker:\n%s", edited)
	for i, s := range sections {
		o := original.sections[i]
		if i != k {
			require.Equal(t, string(original.content[o.Start:o.End]), string(edited[s.Start:s.End]), "document %d changed", i+1)
			continue
		}
		require.Equal(t, string(original.content[o.Start:o.Body]), string(edited[s.Start:s.Body]), "the edited document's marker or comments changed")
		got, err := yamledit.Decode(edited[s.Start:s.End])
		require.NoError(t, err, "the edited document does not parse:\n%s", edited)
		want, err := yamledit.Decode(desired)
		require.NoError(t, err)
		require.True(t, yamledit.Same(got, want), "the edited document reads\n%s\nwant\n%s", edited[s.Body:s.End], desired)
	}
	reindexed, err := NewIndex(".", map[string][]byte{"f.yaml": edited})
	require.NoError(t, err)
	require.NoError(t, reindexed.Check())
}

// changed is a document decoded, changed and encoded the way
// sanitize.Marshal writes objects; false when change does not apply.
func changed(body []byte, change func(map[string]any) bool) ([]byte, bool) {
	var obj map[string]any
	if err := yaml.Unmarshal(body, &obj); err != nil || !change(obj) {
		return nil, false
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(obj); err != nil || enc.Close() != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// withLabel sets metadata.labels.fuzz.
func withLabel(label string) func(map[string]any) bool {
	return func(obj map[string]any) bool {
		meta, ok := obj["metadata"].(map[string]any)
		if !ok {
			return false
		}
		switch labels := meta["labels"].(type) {
		case nil:
			meta["labels"] = map[string]any{"fuzz": label}
		case map[string]any:
			labels["fuzz"] = label
		default:
			return false
		}
		return true
	}
}

// withoutAField deletes the alphabetically first key of spec or data.
func withoutAField(obj map[string]any) bool {
	for _, top := range []string{"spec", "data"} {
		m, ok := obj[top].(map[string]any)
		if !ok || len(m) == 0 {
			continue
		}
		first := ""
		for key := range m {
			if first == "" || key < first {
				first = key
			}
		}
		delete(m, first)
		return true
	}
	return false
}
