package sanitize_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/configbutler/gitops-reverser/internal/sanitize"
)

func configMap() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"kind":       "ConfigMap",
		"immutable":  false,
		"data":       map[string]interface{}{"b.conf": "listen 80\nroot /srv\n", "a": "1.0", "enabled": "true"},
		"apiVersion": "v1",
		"metadata": map[string]interface{}{
			"annotations": map[string]interface{}{"z": "last", "a": "first"},
			"labels":      map[string]interface{}{"tier": "web", "app": "shop"},
			"namespace":   "team-a",
			"name":        "app-config",
		},
	}}
}

func TestMarshalWritesAStableKeyOrder(t *testing.T) {
	obj := configMap()
	obj.Object["zeta"] = "z"
	obj.Object["alpha"] = map[string]interface{}{"y": int64(1), "x": []interface{}{map[string]interface{}{"b": true, "a": nil}}}
	obj.Object["spec"] = map[string]interface{}{"replicas": int64(2), "paused": false}
	obj.Object["type"] = "example.com/kind"
	obj.Object["binaryData"] = map[string]interface{}{"k": "AAE="}
	obj.Object["stringData"] = map[string]interface{}{"k": "v"}

	got, err := sanitize.Marshal(obj)

	require.NoError(t, err)
	require.Equal(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: team-a
  labels:
    app: shop
    tier: web
  annotations:
    a: first
    z: last
spec:
  paused: false
  replicas: 2
data:
  a: "1.0"
  b.conf: |
    listen 80
    root /srv
  enabled: "true"
stringData:
  k: v
binaryData:
  k: AAE=
type: example.com/kind
immutable: false
alpha:
  x:
  - a: null
    b: true
  "y": 1
zeta: z
`, string(got))
}

func TestMarshalIsByteIdenticalForTheSameInput(t *testing.T) {
	first, err := sanitize.Marshal(sanitize.Sanitize(liveDeployment()))
	require.NoError(t, err)
	// Go randomises map iteration; many runs would expose any order leak.
	for range 50 {
		again, err := sanitize.Marshal(sanitize.Sanitize(liveDeployment()))
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
}

func TestMarshalQuotesStringsAReaderWouldMistype(t *testing.T) {
	tests := []struct {
		value      string
		wantQuoted bool
	}{
		{"", true}, {"true", true}, {"False", true}, {"null", true}, {"~", true},
		{"yes", true}, {"no", true}, {"on", true}, {"OFF", true}, {"y", true}, {"n", true},
		{"1", true}, {"1.0", true}, {"-3", true}, {"1e3", true}, {"0x1F", true}, {"0755", true},
		{"1_000", true}, {".inf", true}, {".NaN", true}, {"12:30", true}, {"2024-01-02", true},
		{"2024-01-02T10:00:00Z", true}, {"<<", true},
		{"hello", false}, {"v1.2.3", false}, {"api:1.2.3", false}, {"nginx", false}, {"yesterday", false},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "a"},
				"data": map[string]interface{}{"value": tt.value, tt.value: "as a key"},
			}}

			out, err := sanitize.Marshal(obj)

			require.NoError(t, err)
			quoted := strings.Contains(string(out), `value: "`+tt.value+`"`)
			require.Equal(t, tt.wantQuoted, quoted, "output:\n%s", out)
			requireReadsBackAsStrings(t, obj, out)
		})
	}
}

func TestMarshalWritesMultiLineStringsAsLiteralBlocks(t *testing.T) {
	tests := []struct {
		name, value, want string
	}{
		{"trailing newline", "a\nb\n", "  v: |\n    a\n    b\n"},
		{"no trailing newline", "a\nb", "  v: |-\n    a\n    b\n"},
		{"kept trailing newlines", "a\n\n", "  v: |+\n    a\n\n"},
		{"leading indentation", "  a\nb\n", "  v: |2\n      a\n    b\n"},
		// A literal block cannot hold trailing spaces exactly; the emitter
		// falls back to a quoted string, which still round-trips.
		{"trailing spaces", "a  \nb\n", "  v: \"a  \\nb\\n\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "a"},
				"data": map[string]interface{}{"v": tt.value},
			}}

			out, err := sanitize.Marshal(obj)

			require.NoError(t, err)
			require.Contains(t, string(out), "data:\n"+tt.want)
			requireReadsBackAsStrings(t, obj, out)
		})
	}
}

func TestMarshalKeepsNumberTypes(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Thing", "metadata": map[string]interface{}{"name": "a"},
		"spec": map[string]interface{}{
			"int": int64(3), "wholeFloat": float64(2), "float": 0.25, "big": 1e21,
			"number": json.Number("7"), "plainInt": 4,
		},
	}}

	out, err := sanitize.Marshal(obj)

	require.NoError(t, err)
	require.Contains(t, string(out), "spec:\n  big: 1e+21\n  float: 0.25\n  int: 3\n  number: 7\n  plainInt: 4\n  wholeFloat: 2.0\n")
	var back map[string]interface{}
	require.NoError(t, yaml.Unmarshal(out, &back))
	spec := back["spec"].(map[string]interface{})
	require.IsType(t, float64(0), spec["wholeFloat"], "an integral float stays a float")
	require.IsType(t, 0, spec["int"])
}

func TestMarshalRoundTripsThroughKubernetesYAML(t *testing.T) {
	want := sanitize.Sanitize(liveDeployment())

	out, err := sanitize.Marshal(want)
	require.NoError(t, err)

	// sigs.k8s.io/yaml is what kubectl and kustomize read with (YAML 1.1).
	asJSON, err := k8syaml.YAMLToJSON(out)
	require.NoError(t, err)
	back := &unstructured.Unstructured{}
	require.NoError(t, back.UnmarshalJSON(asJSON))
	require.Equal(t, want.Object, back.Object)
}

func TestMarshalRefusesWhatItCannotRender(t *testing.T) {
	_, err := sanitize.Marshal(nil)
	require.ErrorContains(t, err, "object is nil")

	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "a"},
		"data": map[string]interface{}{"bad": struct{}{}},
	}}
	_, err = sanitize.Marshal(obj)
	require.ErrorContains(t, err, "marshal core/ConfigMap a: field .data.bad: unsupported value type struct {}")
}

// requireReadsBackAsStrings checks that both a YAML 1.2 reader and the YAML
// 1.1 reader behind kubectl read every data value and key back as the same
// string.
func requireReadsBackAsStrings(t *testing.T, obj *unstructured.Unstructured, out []byte) {
	t.Helper()
	want := obj.Object["data"]

	var v3 map[string]interface{}
	require.NoError(t, yaml.Unmarshal(out, &v3))
	require.Equal(t, want, v3["data"], "yaml.v3 read-back")

	asJSON, err := k8syaml.YAMLToJSON(out)
	require.NoError(t, err)
	var v1 map[string]interface{}
	require.NoError(t, json.Unmarshal(asJSON, &v1))
	require.Equal(t, want, v1["data"], "sigs.k8s.io/yaml (YAML 1.1) read-back")
}

// BenchmarkSanitizeAndMarshalConfigMap is the per-event projection cost on
// the hot path: a small ConfigMap, and one carrying four 20-line files.
func BenchmarkSanitizeAndMarshalConfigMap(b *testing.B) {
	small := configMap()
	meta := small.Object["metadata"].(map[string]interface{})
	meta["uid"] = "0b6a3c1e-5d1c-4f3a-9d7e-1f2e3d4c5b6a"
	meta["resourceVersion"] = "48213"
	meta["managedFields"] = []interface{}{map[string]interface{}{"manager": "kubectl", "operation": "Update"}}
	withFiles := small.DeepCopy()
	data := withFiles.Object["data"].(map[string]interface{})
	for _, key := range []string{"nginx.conf", "app.properties", "logging.yaml", "feature-flags"} {
		data[key] = strings.Repeat("some.setting = value-"+key+"\n", 20)
	}
	for _, c := range []struct {
		name string
		obj  *unstructured.Unstructured
	}{{"small", small}, {"four-20-line-files", withFiles}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sanitize.Marshal(sanitize.Sanitize(c.obj)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMarshalNodeIsTheTreeOfItsBytes: the tree MarshalNode returns is what a
// parser reads from its bytes, kind, tag and value, node for node, so the
// planner may use it instead of parsing them; and encoding leaves it as it
// was built.
func TestMarshalNodeIsTheTreeOfItsBytes(t *testing.T) {
	obj := configMap()
	obj.Object["data"] = map[string]interface{}{
		"glob": "*.example.com", "json": `{"a": 1}`, "colon": "a: b", "comment": "x #y", "lead": " space",
		"trail": "line one \nline two", "tab": "a\tb", "empty": "", "on": "on", "time": "12:30", "unicode": "é ✓",
		"multi": "a\nb\n", "dash": "- item", "null-text": "null", "version": "1.2.3",
	}
	obj.Object["spec"] = map[string]interface{}{
		"replicas": int64(3), "ratio": 0.5, "whole": float64(2), "paused": false, "nothing": nil,
		"list":  []interface{}{"a", int64(1), map[string]interface{}{"k": "v"}, []interface{}{}},
		"empty": map[string]interface{}{}, "?odd key": "v", strings.Repeat("k", 130): "long key",
	}

	content, node, err := sanitize.MarshalNode(obj)

	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(content, &doc))
	requireSameTree(t, doc.Content[0], node, "")
	again, err := sanitize.Marshal(obj)
	require.NoError(t, err)
	require.Equal(t, string(again), string(content))
	reencoded, err := yaml.Marshal(node)
	require.NoError(t, err)
	var redoc yaml.Node
	require.NoError(t, yaml.Unmarshal(reencoded, &redoc))
	requireSameTree(t, doc.Content[0], redoc.Content[0], "")
}

func requireSameTree(t *testing.T, parsed, built *yaml.Node, at string) {
	t.Helper()
	require.Equal(t, parsed.Kind, built.Kind, "kind at %q", at)
	require.Equal(t, parsed.ShortTag(), built.ShortTag(), "tag at %q", at)
	require.Equal(t, parsed.Value, built.Value, "value at %q", at)
	require.Len(t, built.Content, len(parsed.Content), "children at %q", at)
	for i := range parsed.Content {
		requireSameTree(t, parsed.Content[i], built.Content[i], at+"/"+parsed.Content[i-i%2].Value)
	}
}

// A rendering is kept as long as its object is mirrored, so it is handed
// out at its own size, not in the larger buffer the encoder grew by
// doubling (a ConfigMap of a few hundred bytes sat in twice that).
func TestMarshalKeepsNoSpareCapacity(t *testing.T) {
	obj := configMap()
	// 300 bytes: past the emitter's 128-byte flushes, grown into 512.
	obj.Object["data"].(map[string]interface{})["padding"] = strings.Repeat("x", 40)
	out, err := sanitize.Marshal(obj)
	require.NoError(t, err)
	// The allocator's size classes leave at most a few dozen bytes over.
	require.Less(t, cap(out)-len(out), 64, "len %d cap %d", len(out), cap(out))
	again, err := sanitize.Marshal(obj)
	require.NoError(t, err)
	require.Equal(t, out, again, "a reused buffer renders the same bytes")
}
