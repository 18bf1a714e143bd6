package sanitize

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// requireSameAsYAMLv3 renders root with the block writer and with
// yaml.v3 and requires the same bytes whenever the writer writes it. It
// reports whether it did (false: MarshalNode leaves the tree to yaml.v3). A
// tree yaml.v3 refuses (text that is not UTF-8 under a !!str tag) must be
// left to it, so that its error reaches the caller.
func requireSameAsYAMLv3(t testing.TB, root *yaml.Node, what string) bool {
	t.Helper()
	want, err := encodeWithYAMLv3(root)
	got, ok := writeBlock(root)
	if err != nil {
		require.False(t, ok, "%s: yaml.v3 fails with %v, and the block writer wrote it", what, err)
		return false
	}
	if ok {
		require.Equal(t, string(want), string(got), what)
	}
	return ok
}

// objectTree is the tree MarshalNode renders for obj.
func objectTree(t testing.TB, obj map[string]interface{}) *yaml.Node {
	t.Helper()
	root, err := mappingNode(obj, topLevelRank, true)
	require.NoError(t, err)
	return root
}

// adversarialScalars are strings that sit on the edges of yaml.v3's style
// choices: words and numbers that resolve to other types, indicators at
// the start, inside and at the end, whitespace and breaks in every
// position, control and non-ASCII characters, a BOM, long strings.
var adversarialScalars = []string{
	"", "a", "yes", "no", "on", "off", "y", "n", "Y", "N", "true", "True", "TRUE", "false", "FALSE", "tRUE",
	"~", "null", "Null", "NULL", "nULL", "<<", "=", "1e3", "1E3", "1e+03", "-1e-3", "1.", ".5", "+.5", "-.5",
	"0x1F", "0X1F", "0o7", "0O7", "-0o7", "0b101", "-0b101", "0777", "0888", "1_000", "_1", "1__0", "0x_1",
	"9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
	"-9223372036854775809", "1.2.3", "10m", "1:20", "12:30:45", "2024-01-02", "2024-1-2", "2024-01-02T03:04:05Z",
	"2024-01-02 03:04:05", "2024-01-02t03:04:05Z", "2024-13-45", "1234-", "12345-1-1",
	".inf", ".Inf", ".INF", "+.inf", "-.inf", "-.Inf", ".nan", ".NaN", ".NAN", ".nAn", "..", "...", "....", "---",
	"--- x", "... x", "-", "--", "- ", "-a", "- a", ":", ": ", ":a", "a:", "a: b", "a:b", "a :b", "?", "? ", "?a",
	"? a", "#", "# x", "a#b", "a #b", "a\t#b", "x #", ",", ",a", "a,b", "[", "]", "{", "}", "[a]", "{a: b}",
	"&a", "*a", "!a", "!!str", "|", "|-", ">", ">-", "'", "''", "'a'", "\"", "\"a\"", "%", "%YAML", "@", "`",
	"a'b", "a\"b", "a\\b", "\\", " ", "  ", " a", "a ", " a ", "a  b", "\t", "\ta", "a\t", "a\tb",
	"\n", "\n\n", "a\n", "a\n\n", "a\n\n\n", "\na", "\n\na", "a\nb", "a\nb\n", "a\n b", "a \nb", " a\nb",
	"a\n\tb", "a\n\nb\n", "\r", "a\rb", "a\r\nb\n", "a\r", "a\u0085b", "\u0085", "a\x85b", "\xff", "a\u2028b", "a\u2029b", "\u2028",
	"a\x00b", "\x00", "\x01", "\x07\x08\x0b\x0c\x1b", "\x7f", "a\u00a0b", "\u00a0", "\u0080", "\u009f",
	"é", "✓ ok", "日本語", "😀", "a😀b", "\ufeff", "\ufeffabc", "a\ufeffb", "\ufffe", "\uffff", "\ue000",
	"\ud7ff", "\U00010000", "key=value", "https://example.com/a?b=c#d", "*.example.com", "$(VAR)", "${VAR}",
	"{{ .Values.x }}", "a: b\nc: d\n", "- a\n- b\n", "  indented\nlines\n", "trailing \nspace\n", "x\n  \n",
	strings.Repeat("x", 200), strings.Repeat("word ", 40), strings.Repeat("k", 128), strings.Repeat("k", 129),
	strings.Repeat("é", 64), strings.Repeat("é", 65), strings.Repeat("line\n", 50),
}

// moreScalars are further edges: numbers, versions and addresses that
// start with a digit, timestamps, and literal blocks' line shapes.
var moreScalars = []string{
	"A", "abc", "a b", "#a", "---a", "..a", ".a", ".5e3", "?a", ",a", "a[b]", "a{b}", "a!", "a'b", "%a", "@a",
	"0", "1", "01", "08", "09", "0X1f", "+1", "-1", "1.5", "1e", "e1", "1ee3", "10.0.0.1", "1.2.3-beta", "v1.2.3",
	"1:20:30.5", "20240102", "2024-01", "3f8e2a", "1e3x", "0x", "0xg", "+", "+a", "99999999999999999999",
	"http://example.com:8080/path?q=1#frag", "a/b/c", "kubernetes.io/name", "a_b",
	"line1\nline2", "line1\nline2\n\n", "line1\n\nline3\n", "\nlead", " lead\nx", "a\n  indented\nb",
	"x\ntrail ", "x\n \ny", "x\r\ny", "a\x1bb",
}

func TestWriteBlockMatchesYAMLv3ForEdgeScalars(t *testing.T) {
	written := 0
	for _, s := range append(adversarialScalars, moreScalars...) {
		for _, node := range []*yaml.Node{stringNode(s), {Kind: yaml.ScalarNode, Tag: "!!str", Value: s}} {
			for _, root := range scalarPlacements(keyNode("k"), node) {
				if requireSameAsYAMLv3(t, root, fmt.Sprintf("%q", s)) {
					written++
				}
			}
		}
		for _, root := range scalarPlacements(keyNode(s), stringNode("v")) {
			if s != "" && !strings.Contains(s, "\n") {
				requireSameAsYAMLv3(t, root, fmt.Sprintf("key %q", s))
			}
		}
	}
	require.Positive(t, written)
}

// scalarPlacements puts key: value in every place a scalar can sit.
func scalarPlacements(key, value *yaml.Node) []*yaml.Node {
	seq := func(items ...*yaml.Node) *yaml.Node {
		return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
	}
	mapping := func(kv ...*yaml.Node) *yaml.Node {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv}
	}
	return []*yaml.Node{
		mapping(key, value),
		mapping(keyNode("a"), keyNode("b"), key, value, keyNode("z"), keyNode("y")),
		mapping(keyNode("outer"), mapping(key, value)),
		mapping(keyNode("list"), seq(value, value)),
		mapping(keyNode("list"), seq(mapping(key, value, keyNode("after"), value))),
		mapping(keyNode("list"), seq(seq(value), mapping())),
		mapping(keyNode("o"), mapping(keyNode("list"), seq(mapping(key, seq(value)), seq(seq(value, value))))),
	}
}

func TestWriteBlockMatchesYAMLv3ForNumbersAndEmpties(t *testing.T) {
	for _, value := range []interface{}{int64(0), int64(-5), int64(9223372036854775807), 1.5, -2.0, 1e21, 1e-7, 0.1, true, false, nil,
		map[string]interface{}{}, []interface{}{}, []interface{}{map[string]interface{}{}, []interface{}{}}} {
		obj := map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "spec": map[string]interface{}{"v": value, "l": []interface{}{value}}}
		require.True(t, requireSameAsYAMLv3(t, objectTree(t, obj), fmt.Sprintf("%#v", value)))
	}
}

func TestMarshalNodeWritesAConfigMapItself(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "app", "namespace": "team-a", "labels": map[string]interface{}{"app.kubernetes.io/name": "app"}},
		"data":     map[string]interface{}{"port": "8080", "config.yaml": "a: 1\nb:\n  - x\n", "url": "http://x:1/y"},
	}}
	content, root, err := MarshalNode(obj)
	require.NoError(t, err)
	want, err := encodeWithYAMLv3(root)
	require.NoError(t, err)
	require.Equal(t, string(want), string(content))
	_, ok := writeBlock(root)
	require.True(t, ok, "a plain ConfigMap is written without yaml.v3")
}

// TestMarshalNodeNamesTheFieldItCannotRender: the path in the error is
// built only when there is an error, and names the field from the root.
func TestMarshalNodeNamesTheFieldItCannotRender(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "x"},
		"spec": map[string]interface{}{"list": []interface{}{"a", map[string]interface{}{"x": struct{}{}}}},
	}}
	_, _, err := MarshalNode(obj)
	require.ErrorContains(t, err, "field .spec.list[1].x: unsupported value type struct {}")
}
