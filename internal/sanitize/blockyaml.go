package sanitize

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Why sanitize writes most YAML itself: a yaml.v3 Encoder cannot be reset,
// and it queues every event of a document before writing it, about 14-20
// KiB of garbage for a small ConfigMap. At a 50,000-object restart the
// encoder was 0.98 s of the operator's 6.5 s of CPU, and most of the 0.88 s
// the garbage collector took (docs/benchmarks.md, scenario K).
//
// writeBlock writes the trees mappingNode builds in the one layout
// MarshalNode asks of yaml.v3 (block style, indent 2, sequences at their
// key's indent, no line folding), for the shapes most objects are made of:
// block mappings and sequences, empty ones as {} and [], and scalars whose
// yaml.v3 form is certain without analysis (the rules below). Anything
// else (a scalar that might need quoting or escaping, non-ASCII text, a
// long key, a node kind or tag MarshalNode does not build) makes it give
// up, and the whole document is rendered by yaml.v3 instead. yaml.v3 stays
// the reference: the differential tests and the fuzz target require equal
// bytes for every tree, so a file the operator writes never changes because
// of which writer wrote it.

// blockWriter is one document being written.
type blockWriter struct {
	out []byte
}

var blockWriters = sync.Pool{New: func() any { return &blockWriter{out: make([]byte, 0, 1024)} }}

// writeBlock renders root, a mapping, or reports ok false when the tree
// holds anything outside the shapes above. The bytes are the caller's own,
// at their size.
func writeBlock(root *yaml.Node) (out []byte, ok bool) {
	if root == nil || root.Kind != yaml.MappingNode || len(root.Content) == 0 {
		return nil, false
	}
	w := blockWriters.Get().(*blockWriter)
	defer func() {
		if cap(w.out) <= maxPooledRenderBuffer {
			blockWriters.Put(w)
		}
	}()
	w.out = w.out[:0]
	if !w.mapping(root, 0, false) {
		return nil, false
	}
	return bytes.Clone(w.out), true
}

// mapping writes a non-empty mapping whose keys sit at indent. inline is
// true when the first key continues a line already begun ("- " of a
// sequence item).
func (w *blockWriter) mapping(n *yaml.Node, indent int, inline bool) bool {
	if len(n.Content)%2 != 0 || !plainNode(n, "!!map") {
		return false
	}
	for i := 0; i < len(n.Content); i += 2 {
		if i > 0 || !inline {
			w.spaces(indent)
		}
		key, value := n.Content[i], n.Content[i+1]
		if !w.key(key) {
			return false
		}
		w.out = append(w.out, ':')
		if !w.value(value, indent, false) {
			return false
		}
	}
	return true
}

// sequence writes a non-empty sequence whose items' dashes sit at indent.
func (w *blockWriter) sequence(n *yaml.Node, indent int, inline bool) bool {
	if !plainNode(n, "!!seq") {
		return false
	}
	for i, item := range n.Content {
		if i > 0 || !inline {
			w.spaces(indent)
		}
		w.out = append(w.out, '-')
		if !w.value(item, indent, true) {
			return false
		}
	}
	return true
}

// value writes what follows a key's colon (afterDash false, the key at
// indent) or a sequence item's dash (afterDash true, the dash at indent),
// and the line break that ends it. Under a key, a mapping starts on the
// next line two further in and a sequence on the next line at the key's
// own indent; after a dash, either continues the dash's line, two further
// in.
func (w *blockWriter) value(n *yaml.Node, indent int, afterDash bool) bool {
	switch n.Kind {
	case yaml.MappingNode:
		switch {
		case len(n.Content) == 0:
			w.out = append(w.out, " {}\n"...)
			return plainNode(n, "!!map")
		case afterDash:
			w.out = append(w.out, ' ')
			return w.mapping(n, indent+2, true)
		}
		w.out = append(w.out, '\n')
		return w.mapping(n, indent+2, false)
	case yaml.SequenceNode:
		switch {
		case len(n.Content) == 0:
			w.out = append(w.out, " []\n"...)
			return plainNode(n, "!!seq")
		case afterDash:
			w.out = append(w.out, ' ')
			return w.sequence(n, indent+2, true)
		}
		w.out = append(w.out, '\n')
		return w.sequence(n, indent, false)
	case yaml.ScalarNode:
		return w.scalar(n, indent)
	}
	return false
}

// key writes a mapping key: plain or double-quoted, on one line, at most
// 128 bytes (yaml.v3 writes a longer key in the "? " form).
func (w *blockWriter) key(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || len(n.Value) > 128 || !plainNode(n, "!!str") {
		return false
	}
	switch n.Style {
	case 0:
		if !certainlyPlain(n.Value) {
			return false
		}
		w.out = append(w.out, n.Value...)
	case yaml.DoubleQuotedStyle:
		if !simplyQuotable(n.Value) {
			return false
		}
		w.quoted(n.Value)
	default:
		return false
	}
	return true
}

// scalar writes a scalar value after " " and ends its line.
func (w *blockWriter) scalar(n *yaml.Node, indent int) bool {
	if n.Anchor != "" || n.Alias != nil || n.HeadComment+n.LineComment+n.FootComment != "" {
		return false
	}
	switch {
	case n.Style == 0 && n.Tag == "!!str":
		if !certainlyPlain(n.Value) {
			return false
		}
		w.out = append(w.out, ' ')
		w.out = append(w.out, n.Value...)
	case n.Style == yaml.DoubleQuotedStyle && n.Tag == "!!str":
		if !simplyQuotable(n.Value) {
			return false
		}
		w.out = append(w.out, ' ')
		w.quoted(n.Value)
	case n.Style == yaml.LiteralStyle && n.Tag == "!!str":
		return w.literal(n.Value, indent)
	case n.Style == 0 && resolvesAs(n.Tag, n.Value):
		w.out = append(w.out, ' ')
		w.out = append(w.out, n.Value...)
	default:
		return false
	}
	w.out = append(w.out, '\n')
	return true
}

// literal writes a multi-line string as a literal block, its lines indented
// two past the key or dash at indent. Only text yaml.v3 writes as a literal block without an
// indentation indicator is taken: printable ASCII lines, none ending in a
// space or a tab, the first not starting with a space or a line break.
func (w *blockWriter) literal(s string, indent int) bool {
	if !strings.Contains(s, "\n") || s[0] == ' ' || s[0] == '\n' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			if i > 0 && s[i-1] == ' ' {
				return false
			}
		case c < ' ' || c > '~':
			return false
		}
	}
	if s[len(s)-1] == ' ' {
		return false
	}
	w.out = append(w.out, " |"...)
	switch {
	case !strings.HasSuffix(s, "\n"):
		w.out = append(w.out, '-')
	case strings.HasSuffix(s, "\n\n"):
		w.out = append(w.out, '+')
	}
	w.out = append(w.out, '\n')
	body := strings.TrimSuffix(s, "\n")
	for line := range strings.SplitSeq(body, "\n") {
		if line != "" {
			w.spaces(indent + 2)
			w.out = append(w.out, line...)
		}
		w.out = append(w.out, '\n')
	}
	return true
}

func (w *blockWriter) quoted(s string) {
	w.out = append(w.out, '"')
	w.out = append(w.out, s...)
	w.out = append(w.out, '"')
}

func (w *blockWriter) spaces(n int) {
	for range n {
		w.out = append(w.out, ' ')
	}
}

// plainNode reports a node with nothing but its kind's tag: no anchor,
// alias, comment or style beyond what the writer writes.
func plainNode(n *yaml.Node, tag string) bool {
	if n.Kind != yaml.ScalarNode && (n.Tag != tag || n.Style != 0) {
		return false
	}
	return n.Anchor == "" && n.Alias == nil && n.HeadComment == "" && n.LineComment == "" && n.FootComment == ""
}

// simplyQuotable reports a string yaml.v3 writes in double quotes as is:
// printable ASCII with no quote or backslash to escape.
func simplyQuotable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// certainlyPlain reports a string yaml.v3 writes unquoted. By the YAML
// rules for plain scalars in block context it must not be empty, start with
// an indicator or a space, end with a space or a colon, hold ": " or " #",
// or start a document marker; yaml.v3 also quotes a string that would be
// read back as another type, and anything with a character outside
// printable ASCII is left to it.
func certainlyPlain(s string) bool {
	if s == "" || strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	switch s[0] {
	case ' ', '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	last := s[len(s)-1]
	if last == ' ' || last == ':' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' {
			return false
		}
		if (c == ':' && s[i+1] == ' ') || (c == '#' && s[i-1] == ' ') {
			return false
		}
	}
	return !otherTypeWhenPlain(s)
}

// otherTypeWhenPlain reports a string yaml.v3 would read back, unquoted, as
// something other than a string, which it therefore quotes: null, the
// booleans, the special floats and the merge key in any spelling, numbers
// in the YAML 1.2 core schema's forms and Go's integer prefixes
// (0x, 0o, 0b, a leading 0), and timestamps of the YAML 1.1 forms yaml.v3
// reads. It answers conservatively (YAML 1.1's yes/no/on/off too): a yes
// only sends the document to yaml.v3.
func otherTypeWhenPlain(s string) bool {
	switch strings.ToLower(s) {
	case "~", "null", "true", "false", "y", "yes", "n", "no", "on", "off", "<<",
		".inf", "-.inf", "+.inf", ".nan":
		return true
	}
	switch c := s[0]; {
	case c == '.':
		_, err := strconv.ParseFloat(s, 64)
		return err == nil || yamlFloat.MatchString(s)
	case c != '+' && c != '-' && (c < '0' || c > '9'):
		return false
	}
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return true
	}
	if yamlFloat.MatchString(plain) {
		return true
	}
	for _, prefix := range []string{"0b", "-0b", "+0b", "0o", "-0o", "+0o", "0x", "-0x", "+0x"} {
		if strings.HasPrefix(plain, prefix) {
			return true
		}
	}
	for _, layout := range yamlTimestamps {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// yamlFloat is the YAML 1.2 core schema's float form (section 10.3.2).
var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// yamlTimestamps are the YAML 1.1 timestamp forms yaml.v3 reads a plain
// scalar as, in Go's layout notation.
var yamlTimestamps = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// resolvesAs reports a non-string scalar MarshalNode built (an int, float,
// bool or null it formatted) that yaml.v3 writes as its value, unquoted.
func resolvesAs(tag, value string) bool {
	switch tag {
	case "!!int":
		_, err := strconv.ParseInt(value, 10, 64)
		return err == nil && !strings.HasPrefix(value, "+")
	case "!!float":
		switch value {
		case ".inf", "-.inf", ".nan":
			return true
		}
		return yamlFloat.MatchString(value)
	case "!!bool":
		return value == "true" || value == "false"
	case "!!null":
		return value == "null"
	}
	return false
}
