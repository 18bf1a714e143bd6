package yamledit

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Equivalent reports whether two documents certainly hold the
// same content, whatever their formatting, key order and comments. It is
// conservative: when unsure (aliases, merge keys, duplicate keys, a plain
// string a YAML 1.1 reader could read as something else) it says no, and
// the caller writes the new bytes.
func Equivalent(old, replacement *yaml.Node) bool {
	return old != nil && equivalentNodes(old, replacement)
}

func equivalentNodes(a, b *yaml.Node) bool { return compareNodes(a, b, false) }

// Same reports whether two trees read the same to any YAML reader:
// equal values, and a scalar a YAML 1.1 reader might misread only when both
// are written alike (the same text reads the same way everywhere). Aliases
// and merge keys are resolved, as every Kubernetes YAML reader does. It
// judges the in-place editor's work, where untouched scalars keep their text.
func Same(a, b *yaml.Node) bool {
	a, b = resolveAlias(a), resolveAlias(b)
	if a.Kind == yaml.MappingNode && b.Kind == yaml.MappingNode && (hasMergeKey(a) || hasMergeKey(b)) {
		ea, okA := effectiveMapping(a, 0)
		eb, okB := effectiveMapping(b, 0)
		return okA && okB && compareNodes(ea, eb, true)
	}
	return compareNodes(a, b, true)
}

// maxMergeDepth bounds merge keys that merge mappings with merge keys.
const maxMergeDepth = 8

func resolveAlias(n *yaml.Node) *yaml.Node {
	for depth := 0; n.Kind == yaml.AliasNode && n.Alias != nil && depth < maxMergeDepth; depth++ {
		n = n.Alias
	}
	return n
}

func hasMergeKey(m *yaml.Node) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].ShortTag() == "!!merge" {
			return true
		}
	}
	return false
}

// effectiveMapping is m with its merge keys applied: the mapping's own keys
// win over merged ones, and an earlier merged mapping over a later one.
func effectiveMapping(m *yaml.Node, depth int) (*yaml.Node, bool) {
	if depth > maxMergeDepth {
		return nil, false
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	seen := map[string]bool{}
	add := func(key, value *yaml.Node) {
		if !seen[key.Value] {
			seen[key.Value] = true
			out.Content = append(out.Content, key, value)
		}
	}
	var merged []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, value := m.Content[i], m.Content[i+1]
		if key.ShortTag() != "!!merge" {
			add(key, value)
			continue
		}
		switch value = resolveAlias(value); value.Kind {
		case yaml.MappingNode:
			merged = append(merged, value)
		case yaml.SequenceNode:
			for _, item := range value.Content {
				merged = append(merged, resolveAlias(item))
			}
		default:
			return nil, false
		}
	}
	for _, source := range merged {
		if source.Kind != yaml.MappingNode {
			return nil, false
		}
		expanded, ok := effectiveMapping(source, depth+1)
		if !ok {
			return nil, false
		}
		for i := 0; i+1 < len(expanded.Content); i += 2 {
			add(expanded.Content[i], expanded.Content[i+1])
		}
	}
	return out, true
}

func equivalentScalars(a, b *yaml.Node) bool {
	return a.ShortTag() == b.ShortTag() && a.Value == b.Value && !Misreadable(a) && !Misreadable(b)
}

func sameScalars(a, b *yaml.Node) bool {
	if a.ShortTag() != b.ShortTag() || a.Value != b.Value || a.ShortTag() == "!!merge" {
		return false
	}
	written := yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
	return a.Style&written == b.Style&written || !Misreadable(a) && !Misreadable(b)
}

// compareNodes compares two trees; same selects Same' rules over
// equivalentNodes' stricter ones.
func compareNodes(a, b *yaml.Node, same bool) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case yaml.ScalarNode:
		return scalarsMatch(a, b, same)
	case yaml.SequenceNode:
		if len(a.Content) != len(b.Content) {
			return false
		}
		for i := range a.Content {
			if !compareChild(a.Content[i], b.Content[i], same) {
				return false
			}
		}
		return true
	case yaml.MappingNode:
		return compareMappings(a, b, same)
	}
	return false // aliases and anything unexpected
}

// compareChild compares nested nodes: through Same (aliases and merge
// keys resolved) when judging the editor's work, strictly otherwise.
func compareChild(a, b *yaml.Node, same bool) bool {
	if same {
		return Same(a, b)
	}
	return compareNodes(a, b, false)
}

func scalarsMatch(a, b *yaml.Node, same bool) bool {
	if same {
		return sameScalars(a, b)
	}
	return equivalentScalars(a, b)
}

// compareMappings compares two mappings key by key, in any order; a key must
// be a string that compares equal to itself (so no merge key, and for
// equivalence nothing Misreadable).
func compareMappings(a, b *yaml.Node, same bool) bool {
	if len(a.Content) != len(b.Content) {
		return false
	}
	find := linearKeyFinder(b)
	if len(b.Content) > 2*linearKeys {
		values, ok := mappingByKey(b)
		if !ok {
			return false
		}
		find = func(key string) (int, bool) { i, ok := values[key]; return i, ok }
	} else if !uniqueStringKeys(b) {
		return false
	}
	if !uniqueStringKeys(a) {
		return false
	}
	for i := 0; i+1 < len(a.Content); i += 2 {
		key := a.Content[i]
		other, found := find(key.Value)
		if !found || !scalarsMatch(key, b.Content[other], same) || !compareChild(a.Content[i+1], b.Content[other+1], same) {
			return false
		}
	}
	return true
}

// linearKeys is the mapping size up to which a key is found by a scan
// rather than through a map: most Kubernetes mappings are small.
const linearKeys = 16

func linearKeyFinder(m *yaml.Node) func(string) (int, bool) {
	return func(key string) (int, bool) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return i, true
			}
		}
		return 0, false
	}
}

// uniqueStringKeys reports whether every key is a string scalar, none twice.
func uniqueStringKeys(m *yaml.Node) bool {
	if len(m.Content) > 2*linearKeys {
		_, ok := mappingByKey(m)
		return ok
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		key := m.Content[i]
		if key.Kind != yaml.ScalarNode || key.ShortTag() != "!!str" {
			return false
		}
		for j := 0; j < i; j += 2 {
			if m.Content[j].Value == key.Value {
				return false
			}
		}
	}
	return true
}

// mappingByKey indexes a mapping's string keys by their index in Content;
// ok is false when a key is not a string or appears twice.
func mappingByKey(m *yaml.Node) (map[string]int, bool) {
	values := make(map[string]int, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		key := m.Content[i]
		if key.Kind != yaml.ScalarNode || key.ShortTag() != "!!str" {
			return nil, false
		}
		if _, dup := values[key.Value]; dup {
			return nil, false
		}
		values[key.Value] = i
	}
	return values, true
}

// Misreadable reports an unquoted string that a YAML 1.1 reader, such as
// kubectl's, might read as another type (yes, on, 12:30, 0755 ...). The test
// is deliberately broad: an unquoted string must start with a letter or a
// slash and not be a YAML 1.1 boolean or null.
func Misreadable(n *yaml.Node) bool {
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
