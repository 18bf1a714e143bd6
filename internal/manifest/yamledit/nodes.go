package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// Decode parses one section's bytes. It returns a nil node for a
// section without a document (empty, comments only, or a bare "---").
func Decode(text []byte) (*yaml.Node, error) {
	decoder := yaml.NewDecoder(bytes.NewReader(text))
	var doc yaml.Node
	if err := decoder.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	var extra yaml.Node
	if err := decoder.Decode(&extra); !errors.Is(err, io.EOF) {
		// A "..." end marker followed by another document without "---":
		// valid YAML, but the section split cannot edit it safely.
		return nil, errors.New("invalid YAML: a second document follows a '...' end marker without '---'")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	top := doc.Content[0]
	if top.Kind == yaml.ScalarNode && top.ShortTag() == "!!null" {
		return nil, nil
	}
	return top, nil
}

// MappingValue returns the value under key in a mapping node, or nil.
func MappingValue(mapping *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if k := mapping.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return mapping.Content[i+1]
		}
	}
	return nil
}

// Lookup follows keys down nested mappings: the value at the end, or nil
// when a step is missing or not a mapping.
func Lookup(n *yaml.Node, keys ...string) *yaml.Node {
	for _, key := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		if n = MappingValue(n, key); n == nil {
			return nil
		}
	}
	return n
}

// Name is the scalar under a mapping's name key, "" without one.
func Name(m *yaml.Node) string {
	if n := Lookup(m, "name"); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// IndexOfKey is where key stands in mapping m's content (its value at +1).
func IndexOfKey(m *yaml.Node, key string) (int, bool) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i, true
		}
	}
	return 0, false
}

// CopyNode is a deep copy of n.
func CopyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = CopyNode(child)
	}
	return &c
}

// SetOrDelete sets key to value in m, or deletes key when value is nil.
func SetOrDelete(m *yaml.Node, key string, value *yaml.Node) {
	i, found := IndexOfKey(m, key)
	switch {
	case found && value == nil:
		m.Content = append(m.Content[:i], m.Content[i+2:]...)
	case found:
		m.Content[i+1] = CopyNode(value)
	case value != nil:
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, CopyNode(value))
	}
}

// StringNode is a string scalar, quoted when a YAML 1.1 reader could take
// it for something else (a tag like 1.28).
func StringNode(value string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value}
	if Misreadable(n) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}
