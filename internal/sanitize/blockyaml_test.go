package sanitize

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// encodeYAMLv3 is the reference: the Encoder as MarshalNode configures it.
func encodeYAMLv3(t testing.TB, root *yaml.Node) []byte {
	content, err := tryYAMLv3(root)
	require.NoError(t, err)
	return content
}

func tryYAMLv3(root *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	err := enc.Close()
	return buf.Bytes(), err
}

// requireSameAsYAMLv3 holds writeBlock to yaml.v3's bytes for root, and
// returns whether writeBlock wrote it (rather than leaving it to yaml.v3).
// A tree yaml.v3 refuses (text that is not UTF-8 under a !!str tag) must
// be left to it, so the refusal reaches the caller.
func requireSameAsYAMLv3(t testing.TB, root *yaml.Node) bool {
	want, err := tryYAMLv3(root)
	got, ok := writeBlock(root)
	if err != nil {
		require.False(t, ok, "yaml.v3 refuses this tree (%v), and the block writer wrote it", err)
		return false
	}
	if ok {
		require.Equal(t, string(want), string(got))
	}
	return ok
}

// blockScalars are values chosen to sit on every edge of the plain,
// quoted and literal rules: indicators, numbers and timestamps in their
// many spellings, spaces and breaks at the ends, non-ASCII and control
// characters.
var blockScalars = []string{
	"", " ", "a", "A", "abc", "a b", "a  b", " a", "a ", "a:", "a:b", "a: b", "a :b", "a#b", "a #b", "#a",
	"-", "-a", "- a", "--", "---", "---a", "...", "..a", ".a", ".5", ".5e3", ".inf", ".Inf", ".NaN", "-.inf", "+.inf",
	"?", "?a", "? a", ":", ":a", ",a", "a,b", "[a]", "a[b]", "{a}", "a{b}", "&a", "*a", "!a", "a!", "|a", ">a",
	"'a", "a'b", "\"a", "a\"b", "%a", "@a", "`a", "a\\b", "a\tb", "\ta", "é", "aé", "日本",
	"~", "null", "Null", "NULL", "nULL", "true", "True", "TRUE", "tRUE", "false", "yes", "Yes", "no", "on", "off", "y", "n", "Y", "N", "<<", "=",
	"0", "1", "01", "0777", "08", "09", "0x1F", "0X1f", "0o17", "0b101", "-0b101", "+1", "-1", "1_000", "1__0",
	"1.5", "1.", "1e3", "1E3", "1e+3", "1.5e-3", "1e", "e1", "1ee3", "10.0.0.1", "1.2.3", "1.2.3-beta", "v1.2.3",
	"12:30", "1:20:30.5", "2024-01-02", "2024-1-2", "2024-01-02T10:00:00Z", "2024-01-02t10:00:00Z", "2024-01-02 10:00:00",
	"20240102", "2024-01", "2024-13-45", "3f8e2a", "1e3x", "0x", "0xg", "+", "+a", "9223372036854775807", "18446744073709551615",
	"99999999999999999999", "http://example.com:8080/path?q=1#frag", "key=value", "a/b/c", "kubernetes.io/name", "a_b",
	strings.Repeat("x", 200), strings.Repeat("word ", 40) + "end",
	"line1\nline2", "line1\nline2\n", "line1\nline2\n\n", "line1\n\nline3\n", "\nlead", " lead\nx", "a\n  indented\nb",
	"trail \nx", "x\ntrail ", "x\n \ny", "x\n\ty", "x\r\ny", "x\u0085y", "x\u2028y", "a\x00b", "a\x7fb", "a\x1bb",
}

func TestWriteBlockMatchesYAMLv3ForEdgeScalars(t *testing.T) {
	written := 0
	for _, s := range blockScalars {
		for _, node := range []*yaml.Node{stringNode(s), {Kind: yaml.ScalarNode, Tag: "!!str", Value: s}} {
			for _, root := range scalarPlacements(keyNode("k"), node) {
				if requireSameAsYAMLv3(t, root) {
					written++
				}
			}
		}
		for _, root := range scalarPlacements(keyNode(s), stringNode("v")) {
			if s != "" && !strings.Contains(s, "\n") {
				requireSameAsYAMLv3(t, root)
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
		root, err := mappingNode(obj, topLevelRank, "")
		require.NoError(t, err)
		require.True(t, requireSameAsYAMLv3(t, root), "%#v", value)
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
	require.Equal(t, string(encodeYAMLv3(t, root)), string(content))
	_, ok := writeBlock(root)
	require.True(t, ok, "a plain ConfigMap is written without yaml.v3")
}
