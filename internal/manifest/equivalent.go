package manifest

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// equivalentYAML reports whether two document bodies certainly hold the
// same content, whatever their formatting, key order and comments. It is
// conservative: when unsure (aliases, merge keys, duplicate keys, a plain
// string a YAML 1.1 reader could read as something else) it says no, and
// the caller writes the new bytes.
func (ws *workspace) equivalentYAML(old []byte, replacement *yaml.Node) bool {
	ws.parses++
	top, err := decodeSection(old)
	if err != nil || top == nil {
		return false
	}
	return equivalentNodes(top, replacement)
}

func equivalentNodes(a, b *yaml.Node) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case yaml.ScalarNode:
		return a.ShortTag() == b.ShortTag() && a.Value == b.Value && !misreadable(a) && !misreadable(b)
	case yaml.SequenceNode:
		if len(a.Content) != len(b.Content) {
			return false
		}
		for i := range a.Content {
			if !equivalentNodes(a.Content[i], b.Content[i]) {
				return false
			}
		}
		return true
	case yaml.MappingNode:
		return equivalentMappings(a, b)
	}
	return false // aliases and anything unexpected
}

// equivalentMappings compares two mappings key by key, in any order.
func equivalentMappings(a, b *yaml.Node) bool {
	if len(a.Content) != len(b.Content) {
		return false
	}
	values, ok := mappingByKey(b)
	if !ok {
		return false
	}
	seen := make(map[string]bool, len(values))
	for i := 0; i+1 < len(a.Content); i += 2 {
		key := a.Content[i]
		if !plainKey(key) || seen[key.Value] {
			return false
		}
		seen[key.Value] = true
		other, found := values[key.Value]
		if !found || !equivalentNodes(a.Content[i+1], other) {
			return false
		}
	}
	return true
}

// mappingByKey indexes a mapping by its string keys; ok is false when a key
// is not a simple string or appears twice.
func mappingByKey(m *yaml.Node) (map[string]*yaml.Node, bool) {
	values := make(map[string]*yaml.Node, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		key := m.Content[i]
		if !plainKey(key) {
			return nil, false
		}
		if _, dup := values[key.Value]; dup {
			return nil, false
		}
		values[key.Value] = m.Content[i+1]
	}
	return values, true
}

// plainKey accepts string keys a YAML 1.1 reader reads the same way; a merge
// key ("<<") is refused because it splices in another mapping.
func plainKey(key *yaml.Node) bool {
	return key.Kind == yaml.ScalarNode && key.ShortTag() == "!!str" && !misreadable(key)
}

// misreadable reports an unquoted string that a YAML 1.1 reader, such as
// kubectl's, might read as another type (yes, on, 12:30, 0755 ...). The test
// is deliberately broad: an unquoted string must start with a letter or a
// slash and not be a YAML 1.1 boolean or null.
func misreadable(n *yaml.Node) bool {
	if n.ShortTag() != "!!str" || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return false
	}
	if n.Value == "" {
		return true
	}
	if c := n.Value[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/') {
		return true
	}
	switch strings.ToLower(n.Value) {
	case "y", "yes", "n", "no", "on", "off", "true", "false", "null":
		return true
	}
	return false
}
