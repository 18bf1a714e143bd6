package yamledit

import (
	"bytes"
	"slices"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// spliceError is an error that can be a constant, so the sentinel needs
// no package-level variable.
type spliceError string

func (e spliceError) Error() string { return string(e) }

// errCannotSplice says the in-place editor cannot express an edit of some
// node; the caller replaces the smallest enclosing value instead, and at the
// top the whole document body.
const errCannotSplice spliceError = "cannot edit in place"

// splicer edits a document's text so that it reads as the desired tree while
// every byte outside the changed values stays as it was: comments, key
// order, quoting, indentation and blank lines of the untouched parts. It
// works on the text, with the parsed tree only to find where each node
// lies: re-encoding the tree would normalise all of the above.
type splicer struct {
	text       []byte
	lineStarts []int // byte offset of each line's first byte
	newline    string
	indent     int  // indentation step of new nested blocks
	compactSeq bool // a sequence under a key starts at the key's column
	edits      []splice
	// desired is the desired document's own text, whose scalar tokens are
	// copied when they can stand as they are, instead of being encoded.
	desired *splicer
}

// splice replaces text[start:end) with text; start == end inserts.
type splice struct {
	start, end int
	text       []byte
}

// Splice returns old edited to read as desired, or an error when the
// editor cannot do it safely (the caller then writes the desired bytes).
func Splice(old []byte, oldTop *yaml.Node, desiredText []byte, desired *yaml.Node) ([]byte, error) {
	if oldTop.Kind != yaml.MappingNode || desired.Kind != yaml.MappingNode || oldTop.Style&yaml.FlowStyle != 0 {
		return nil, errCannotSplice
	}
	sp := newSplicer(old)
	sp.detectStyle(oldTop)
	if desiredText != nil {
		sp.desired = newSplicer(desiredText)
		sp.desired.detectStyle(desired)
	}
	if err := sp.editMapping(oldTop, desired); err != nil {
		return nil, err
	}
	return sp.apply()
}

func newSplicer(text []byte) *splicer {
	sp := &splicer{text: text, lineStarts: []int{0}, newline: "\n", indent: 2, compactSeq: true}
	for i, c := range text {
		if c == '\n' {
			sp.lineStarts = append(sp.lineStarts, i+1)
		}
	}
	if bytes.Contains(text, []byte("\r\n")) {
		sp.newline = "\r\n"
	}
	return sp
}

// detectStyle reads the document's indentation step and sequence style from
// its first nested block mapping and first block sequence under a key, so
// new blocks look like their neighbours.
func (sp *splicer) detectStyle(top *yaml.Node) {
	foundIndent, foundSeq := false, false
	var walk func(m *yaml.Node)
	walk = func(m *yaml.Node) {
		for i := 0; i+1 < len(m.Content) && !(foundIndent && foundSeq); i += 2 {
			key, value := m.Content[i], m.Content[i+1]
			if value.Style&yaml.FlowStyle != 0 || value.Line <= key.Line {
				continue
			}
			switch value.Kind {
			case yaml.MappingNode:
				if !foundIndent && value.Column > key.Column {
					sp.indent, foundIndent = value.Column-key.Column, true
				}
				walk(value)
			case yaml.SequenceNode:
				if !foundSeq {
					sp.compactSeq, foundSeq = value.Column == key.Column, true
					if !foundIndent && value.Column > key.Column {
						sp.indent, foundIndent = value.Column-key.Column, true
					}
				}
				for _, item := range value.Content {
					if item.Kind == yaml.MappingNode {
						walk(item)
					}
				}
			}
		}
	}
	walk(top)
}

// apply performs the recorded edits in order of position.
func (sp *splicer) apply() ([]byte, error) {
	slices.SortStableFunc(sp.edits, func(a, b splice) int { return a.start - b.start })
	var out bytes.Buffer
	at := 0
	for _, e := range sp.edits {
		if e.start < at || e.end < e.start {
			return nil, errCannotSplice // overlapping edits: a bug here, never a corrupt file
		}
		out.Write(sp.text[at:e.start])
		out.Write(e.text)
		at = e.end
	}
	out.Write(sp.text[at:])
	return out.Bytes(), nil
}

// --- positions ---

// offset converts a node's 1-based line and (character) column to a byte
// offset.
func (sp *splicer) offset(n *yaml.Node) (int, error) {
	if n.Line < 1 || n.Line > len(sp.lineStarts) {
		return 0, errCannotSplice
	}
	at := sp.lineStarts[n.Line-1]
	for col := 1; col < n.Column; col++ {
		if at >= len(sp.text) || sp.text[at] == '\n' {
			return 0, errCannotSplice
		}
		_, size := utf8.DecodeRune(sp.text[at:])
		at += size
	}
	return at, nil
}

// tokenStart skips a node's properties (anchor, tag) to its content.
func (sp *splicer) tokenStart(n *yaml.Node) (int, error) {
	at, err := sp.offset(n)
	if err != nil {
		return 0, err
	}
	for at < len(sp.text) && (sp.text[at] == '&' || sp.text[at] == '!') {
		for at < len(sp.text) && !isBlank(sp.text[at]) {
			at++
		}
		for at < len(sp.text) && (sp.text[at] == ' ' || sp.text[at] == '\t') {
			at++
		}
	}
	if at >= len(sp.text) || sp.text[at] == '\n' || sp.text[at] == '\r' {
		return 0, errCannotSplice // properties alone on a line
	}
	return at, nil
}

func (sp *splicer) lineOf(offset int) int {
	line, _ := slices.BinarySearch(sp.lineStarts, offset+1)
	return line - 1
}

// lineStart is the offset of the start of the line holding offset.
func (sp *splicer) lineStart(offset int) int { return sp.lineStarts[sp.lineOf(offset)] }

// nextLineStart is the offset just past the line holding offset (len(text)
// on the last line).
func (sp *splicer) nextLineStart(offset int) int {
	if line := sp.lineOf(offset); line+1 < len(sp.lineStarts) {
		return sp.lineStarts[line+1]
	}
	return len(sp.text)
}

// firstOnLine reports whether only blanks precede offset on its line.
func (sp *splicer) firstOnLine(offset int) bool {
	for i := sp.lineStart(offset); i < offset; i++ {
		if sp.text[i] != ' ' {
			return false
		}
	}
	return true
}

// lineContentEnd is where a line's content ends: before a comment and
// trailing blanks, from offset on.
func (sp *splicer) lineContentEnd(from int) int {
	end := from
	for i := from; i < len(sp.text) && sp.text[i] != '\n'; i++ {
		c := sp.text[i]
		if c == '#' && i > from && (sp.text[i-1] == ' ' || sp.text[i-1] == '\t') {
			break
		}
		if c != ' ' && c != '\t' && c != '\r' {
			end = i + 1
		}
	}
	return end
}

// lineIndent counts a line's leading spaces and reports whether it holds
// nothing else (blank).
func (sp *splicer) lineIndent(line int) (int, bool) {
	at := sp.lineStarts[line]
	n := 0
	for at+n < len(sp.text) && sp.text[at+n] == ' ' {
		n++
	}
	rest := at + n
	blank := rest >= len(sp.text) || sp.text[rest] == '\n' || sp.text[rest] == '\r'
	return n, blank
}

// --- extents ---

// isEmptyNull is a value written as nothing ("key:" or "-").
func isEmptyNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Value == "" && n.Style == 0
}

// end is the offset just past node n's content. parentIndent is the column
// (0-based) of the block holding it: a mapping value's key, a sequence
// item's dash.
func (sp *splicer) end(n *yaml.Node, parentIndent int) (int, error) {
	if n.Style&yaml.FlowStyle != 0 && (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) {
		start, err := sp.tokenStart(n)
		if err != nil {
			return 0, err
		}
		return sp.flowEnd(start)
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return sp.scalarEnd(n, parentIndent)
	case yaml.AliasNode:
		start, err := sp.offset(n)
		if err != nil {
			return 0, err
		}
		end := start + 1
		for end < len(sp.text) && !isBlank(sp.text[end]) && !bytes.ContainsRune([]byte(",[]{}"), rune(sp.text[end])) {
			end++
		}
		return end, nil
	case yaml.MappingNode:
		if len(n.Content) < 2 {
			return 0, errCannotSplice
		}
		return sp.pairEnd(n.Content[len(n.Content)-2], n.Content[len(n.Content)-1])
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return 0, errCannotSplice
		}
		return sp.itemEnd(n, n.Content[len(n.Content)-1])
	}
	return 0, errCannotSplice
}

// pairEnd is the end of a block mapping pair: its value's, or just past the
// colon for an empty value.
func (sp *splicer) pairEnd(key, value *yaml.Node) (int, error) {
	if isEmptyNull(value) {
		return sp.colonEnd(key)
	}
	return sp.end(value, key.Column-1)
}

// itemEnd is the end of a block sequence item.
func (sp *splicer) itemEnd(seq, item *yaml.Node) (int, error) {
	if isEmptyNull(item) {
		dash, err := sp.dashOf(item)
		return dash + 1, err
	}
	return sp.end(item, seq.Column-1)
}

// colonEnd is the offset just past the ':' that follows a block key.
func (sp *splicer) colonEnd(key *yaml.Node) (int, error) {
	if key.Kind != yaml.ScalarNode {
		return 0, errCannotSplice
	}
	at, err := sp.tokenStart(key)
	if err != nil {
		return 0, err
	}
	if sp.text[at] == '?' {
		return 0, errCannotSplice // an explicit key
	}
	switch key.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle) {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if at, err = sp.quotedEnd(at); err != nil {
			return 0, err
		}
	}
	for ; at < len(sp.text) && sp.text[at] != '\n'; at++ {
		if sp.text[at] == ':' && (at+1 == len(sp.text) || isBlank(sp.text[at+1])) {
			return at + 1, nil
		}
	}
	return 0, errCannotSplice
}

// dashOf finds the '-' indicator of a block sequence item, which is the
// first thing on its line.
func (sp *splicer) dashOf(item *yaml.Node) (int, error) {
	at, err := sp.offset(item)
	if err != nil {
		return 0, err
	}
	for at--; at >= 0 && isBlank(sp.text[at]); at-- {
	}
	if at < 0 || sp.text[at] != '-' || !sp.firstOnLine(at) {
		return 0, errCannotSplice
	}
	return at, nil
}

func (sp *splicer) scalarEnd(n *yaml.Node, parentIndent int) (int, error) {
	start, err := sp.tokenStart(n)
	if err != nil {
		return 0, err
	}
	switch {
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		return sp.quotedEnd(start)
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return sp.blockScalarEnd(start, parentIndent)
	}
	return sp.plainEnd(n, start, parentIndent)
}

// quotedEnd is the end of the quoted scalar starting at start.
func (sp *splicer) quotedEnd(start int) (int, error) {
	quote := sp.text[start]
	for i := start + 1; i < len(sp.text); i++ {
		switch c := sp.text[i]; {
		case quote == '"' && c == '\\':
			i++
		case c == quote && quote == '\'' && i+1 < len(sp.text) && sp.text[i+1] == '\'':
			i++
		case c == quote:
			return i + 1, nil
		}
	}
	return 0, errCannotSplice
}

// blockScalarEnd is the end of the last content line of a literal or folded
// scalar whose header starts at start. Trailing blank lines are left out.
func (sp *splicer) blockScalarEnd(start, parentIndent int) (int, error) {
	end := sp.lineContentEnd(start)
	contentIndent := -1
	for i := start + 1; i < end; i++ {
		if c := sp.text[i]; c >= '1' && c <= '9' {
			contentIndent = parentIndent + int(c-'0')
		}
	}
	for line := sp.lineOf(start) + 1; line < len(sp.lineStarts); line++ {
		indent, blank := sp.lineIndent(line)
		if blank {
			continue
		}
		if contentIndent < 0 {
			if indent <= parentIndent {
				break
			}
			contentIndent = indent
		}
		if indent < contentIndent {
			break
		}
		end = sp.lineStarts[line]
		for end < len(sp.text) && sp.text[end] != '\n' && sp.text[end] != '\r' {
			end++
		}
	}
	return end, nil
}

// plainEnd is the end of a plain scalar, which may continue on more
// indented lines. The text found must fold to the parsed value.
func (sp *splicer) plainEnd(n *yaml.Node, start, parentIndent int) (int, error) {
	end := sp.lineContentEnd(start)
	folded := string(sp.text[start:end])
	pendingBreaks := 0
	for line := sp.lineOf(start) + 1; folded != n.Value && line < len(sp.lineStarts); line++ {
		indent, blank := sp.lineIndent(line)
		if blank {
			pendingBreaks++
			continue
		}
		from := sp.lineStarts[line] + indent
		if indent <= parentIndent || sp.text[from] == '#' {
			break
		}
		lineEnd := sp.lineContentEnd(from)
		if pendingBreaks == 0 {
			folded += " "
		}
		for ; pendingBreaks > 0; pendingBreaks-- {
			folded += "\n"
		}
		folded += string(sp.text[from:lineEnd])
		end = lineEnd
	}
	if folded != n.Value {
		return 0, errCannotSplice
	}
	return end, nil
}

// flowEnd is the end of the flow collection opening at start.
func (sp *splicer) flowEnd(start int) (int, error) {
	depth := 0
	for i := start; i < len(sp.text); i++ {
		switch c := sp.text[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return i + 1, nil
			}
		case '"', '\'':
			end, err := sp.quotedEnd(i)
			if err != nil {
				return 0, err
			}
			i = end - 1
		case '#':
			if i > start && isBlank(sp.text[i-1]) {
				i = sp.nextLineStart(i) - 1
			}
		}
	}
	return 0, errCannotSplice
}
