package sanitize

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// topLevelRank orders the keys a reader looks for first; unranked keys follow
// alphabetically.
func topLevelRank(key string) int {
	switch key {
	case "apiVersion":
		return 0
	case "kind":
		return 1
	case "metadata":
		return 2
	case "spec":
		return 3
	case "data":
		return 4
	case "stringData":
		return 5
	case "binaryData":
		return 6
	case "type":
		return 7
	case "immutable":
		return 8
	}
	return unranked
}

func metadataRank(key string) int {
	switch key {
	case metaName:
		return 0
	case metaNamespace:
		return 1
	case metaLabels:
		return 2
	case metaAnnotations:
		return 3
	}
	return unranked
}

func alphabetical(string) int { return unranked }

const unranked = math.MaxInt

// Marshal renders obj as one stable YAML document (see the package
// documentation for the exact layout). The same object always yields the
// same bytes. It does not sanitize: pass it the result of Sanitize.
func Marshal(obj *unstructured.Unstructured) ([]byte, error) {
	content, _, err := MarshalNode(obj)
	return content, err
}

// MarshalNode is Marshal plus the tree the bytes were encoded from: the
// mapping node a YAML parser would return for them (the same kinds, tags
// and values, without line and column), so that a consumer which needs the
// tree does not parse back what was just rendered. The node is shared with
// no one; the encoder does not modify it.
func MarshalNode(obj *unstructured.Unstructured) ([]byte, *yaml.Node, error) {
	if obj == nil || obj.Object == nil {
		return nil, nil, errors.New("marshal object: object is nil")
	}
	root, err := mappingNode(obj.Object, topLevelRank, true)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal %s: %w", IdentityOf(obj), err)
	}
	if content, ok := writeBlock(root); ok {
		return content, root, nil
	}
	content, err := encodeWithYAMLv3(root)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal %s: %w", IdentityOf(obj), err)
	}
	return content, root, nil
}

// encodeWithYAMLv3 renders root with yaml.v3's Encoder in the layout
// writeBlock writes (blockyaml.go): the reference the block writer is held
// to, and the renderer of whatever it leaves.
func encodeWithYAMLv3(root *yaml.Node) ([]byte, error) {
	buf := renderBuffers.Get().(*bytes.Buffer)
	defer putRenderBuffer(buf)
	enc := yaml.NewEncoder(buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("flush yaml: %w", err)
	}
	return bytes.Clone(buf.Bytes()), nil
}

// renderBuffers are the buffers the encoder writes into. A rendering is
// kept for as long as the object is mirrored (the window, the index, the
// blob cache share it), and a buffer grown by doubling as the emitter
// flushes its 128-byte chunks holds a 300-byte ConfigMap in 512 bytes:
// the rendering is copied out at its size, and the buffer reused.
var renderBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledRenderBuffer keeps a rare large object's buffer out of the pool.
const maxPooledRenderBuffer = 64 << 10

func putRenderBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledRenderBuffer {
		return
	}
	buf.Reset()
	renderBuffers.Put(buf)
}

// mappingNode renders m with its keys ordered by rank, then alphabetically.
// root is true for the object itself, whose metadata has its own order.
func mappingNode(m map[string]interface{}, rank func(string) int, root bool) (*yaml.Node, error) {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	node := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: make([]*yaml.Node, 0, 2*len(keys))}
	for _, key := range keys {
		childRank := alphabetical
		if root && key == "metadata" {
			childRank = metadataRank
		}
		value, err := valueNode(m[key], childRank)
		if err != nil {
			return nil, atField(err, "."+key)
		}
		node.Content = append(node.Content, keyNode(key), value)
	}
	return node, nil
}

// valueNode renders one JSON-compatible value.
func valueNode(value interface{}, rank func(string) int) (*yaml.Node, error) {
	switch typed := value.(type) {
	case map[string]interface{}:
		return mappingNode(typed, rank, false)
	case []interface{}:
		node := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 0, len(typed))}
		for i, item := range typed {
			child, err := valueNode(item, alphabetical)
			if err != nil {
				return nil, atField(err, "["+strconv.Itoa(i)+"]")
			}
			node.Content = append(node.Content, child)
		}
		return node, nil
	case string:
		return stringNode(typed), nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(typed)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return numberNode(value)
}

// fieldError names the field a value that cannot be rendered sits at. The
// path is built as the error unwinds, so a rendering that succeeds builds
// no path strings.
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string { return "field " + e.path + ": " + e.err.Error() }

func (e *fieldError) Unwrap() error { return e.err }

// atField puts segment in front of err's field path.
func atField(err error, segment string) error {
	var field *fieldError
	if errors.As(err, &field) {
		field.path = segment + field.path
		return field
	}
	return &fieldError{path: segment, err: err}
}

// numberNode renders the numeric types unstructured content can hold.
func numberNode(value interface{}) (*yaml.Node, error) {
	switch typed := value.(type) {
	case int64:
		return intNode(strconv.FormatInt(typed, 10)), nil
	case int:
		return intNode(strconv.Itoa(typed)), nil
	case int32:
		return intNode(strconv.FormatInt(int64(typed), 10)), nil
	case float64:
		return floatNode(typed), nil
	case float32:
		return floatNode(float64(typed)), nil
	case json.Number:
		if i, err := typed.Int64(); err == nil {
			return intNode(strconv.FormatInt(i, 10)), nil
		}
		f, err := typed.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %q: %w", typed, err)
		}
		return floatNode(f), nil
	}
	return nil, fmt.Errorf("unsupported value type %T", value)
}

func intNode(text string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: text}
}

// floatNode keeps a float a float when read back: an integral value gets a
// ".0" so it does not come back as an int.
func floatNode(f float64) *yaml.Node {
	var text string
	switch {
	case math.IsInf(f, 1):
		text = ".inf"
	case math.IsInf(f, -1):
		text = "-.inf"
	case math.IsNaN(f):
		text = ".nan"
	default:
		text = strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(text, ".eE") {
			text += ".0"
		}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: text}
}

// stringNode renders a string value: multi-line strings as literal blocks,
// strings a YAML reader could mis-type quoted. The emitter still falls back
// to a quoted style when a literal block cannot hold the value exactly
// (trailing spaces on a line, for example).
func stringNode(s string) *yaml.Node {
	node := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n"):
		node.Style = yaml.LiteralStyle
	case ambiguousPlainScalar(s):
		node.Style = yaml.DoubleQuotedStyle
	}
	return node
}

// keyNode renders a map key; keys are never block scalars.
func keyNode(key string) *yaml.Node {
	node := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	if strings.Contains(key, "\n") || ambiguousPlainScalar(key) {
		node.Style = yaml.DoubleQuotedStyle
	}
	return node
}
