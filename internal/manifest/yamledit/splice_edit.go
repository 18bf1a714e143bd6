package yamledit

import (
	"bytes"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// slot is where a node sits: the value of key in a block mapping, or an
// item of the block sequence seq; desiredKey and desiredSeq are the same
// place in the desired tree.
type slot struct {
	key, desiredKey *yaml.Node
	seq, desiredSeq *yaml.Node
}

// desiredIndent is parentIndent in the desired text, or -1 when unknown.
func (s slot) desiredIndent() int {
	switch {
	case s.desiredKey != nil:
		return s.desiredKey.Column - 1
	case s.desiredSeq != nil:
		return s.desiredSeq.Column - 1
	}
	return -1
}

// parentIndent is the column (0-based) of the block the slot belongs to.
func (s slot) parentIndent() int {
	if s.key != nil {
		return s.key.Column - 1
	}
	return s.seq.Column - 1
}

// editNode records the edits that turn old into desired. When the inside of
// old cannot be edited, the whole value is replaced; only when that fails
// too does the error reach the caller.
func (sp *splicer) editNode(old, desired *yaml.Node, at slot) error {
	if Same(old, desired) {
		return nil
	}
	mark := len(sp.edits)
	if err := sp.editInside(old, desired, at); err == nil {
		return nil
	}
	sp.edits = sp.edits[:mark]
	return sp.replaceValue(old, desired, at)
}

func (sp *splicer) editInside(old, desired *yaml.Node, at slot) error {
	block := old.Style&yaml.FlowStyle == 0
	switch {
	case old.Kind == yaml.MappingNode && desired.Kind == yaml.MappingNode && block && len(desired.Content) > 0:
		return sp.editMapping(old, desired)
	case old.Kind == yaml.SequenceNode && desired.Kind == yaml.SequenceNode && block && len(desired.Content) > 0:
		return sp.editSequence(old, desired)
	case old.Kind == yaml.ScalarNode && desired.Kind == yaml.ScalarNode && !isEmptyNull(old):
		return sp.replaceScalar(old, desired, at)
	}
	return errCannotSplice
}

// editMapping keeps old's keys in their order: a key desired lacks is
// deleted with its lines, a new key is inserted after the key it follows
// in desired, and a shared key's value is edited.
func (sp *splicer) editMapping(old, desired *yaml.Node) error {
	oldKeys, ok := mappingByKey(old)
	if !ok {
		return errCannotSplice
	}
	desiredKeys, ok := mappingByKey(desired)
	if !ok {
		return errCannotSplice
	}
	for i := 0; i+1 < len(old.Content); i += 2 {
		key := old.Content[i]
		if j, found := desiredKeys[key.Value]; !found || !Same(key, desired.Content[j]) {
			if err := sp.deletePair(key, old.Content[i+1]); err != nil {
				return err
			}
		}
	}
	prevEnd := -1
	for j := 0; j+1 < len(desired.Content); j += 2 {
		key, value := desired.Content[j], desired.Content[j+1]
		if i, found := oldKeys[key.Value]; found && Same(old.Content[i], key) {
			oldKey, oldValue := old.Content[i], old.Content[i+1]
			if err := sp.editNode(oldValue, value, slot{key: oldKey, desiredKey: key}); err != nil {
				return err
			}
			end, err := sp.pairEnd(oldKey, oldValue)
			if err != nil {
				return err
			}
			prevEnd = end
			continue
		}
		if err := sp.insertPair(old, prevEnd, key, value); err != nil {
			return err
		}
	}
	return nil
}

func (sp *splicer) deletePair(key, value *yaml.Node) error {
	start, err := sp.offset(key)
	if err != nil {
		return err
	}
	if !sp.firstOnLine(start) {
		return errCannotSplice // the first key of a "- key: v" item
	}
	end, err := sp.pairEnd(key, value)
	if err != nil {
		return err
	}
	sp.edits = append(sp.edits, splice{start: sp.lineStart(start), end: sp.nextLineStart(end)})
	return nil
}

// insertPair adds key: value to the block mapping m on the line after
// prevEnd, or, for a key desired puts first, before m's first key (after
// its first pair when that key shares its line with a dash).
func (sp *splicer) insertPair(m *yaml.Node, prevEnd int, key, value *yaml.Node) error {
	first, err := sp.offset(m.Content[0])
	if err != nil {
		return err
	}
	at := sp.lineStart(first)
	switch {
	case prevEnd >= 0:
		at = sp.nextLineStart(prevEnd)
	case !sp.firstOnLine(first):
		end, err := sp.pairEnd(m.Content[0], m.Content[1])
		if err != nil {
			return err
		}
		at = sp.nextLineStart(end)
	}
	text, err := sp.renderBlock(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key, value}}, m.Content[0].Column-1)
	if err != nil {
		return err
	}
	sp.insert(at, text)
	return nil
}

// editSequence keeps the items old and desired share at both ends, edits
// the ones in between pairwise, and deletes or inserts the rest.
func (sp *splicer) editSequence(old, desired *yaml.Node) error {
	o, d := old.Content, desired.Content
	prefix := 0
	for prefix < len(o) && prefix < len(d) && Same(o[prefix], d[prefix]) {
		prefix++
	}
	suffix := 0
	for suffix < len(o)-prefix && suffix < len(d)-prefix && Same(o[len(o)-1-suffix], d[len(d)-1-suffix]) {
		suffix++
	}
	oldMid, desiredMid := o[prefix:len(o)-suffix], d[prefix:len(d)-suffix]
	paired := min(len(oldMid), len(desiredMid))
	for i := range paired {
		if err := sp.editNode(oldMid[i], desiredMid[i], slot{seq: old, desiredSeq: desired}); err != nil {
			return err
		}
	}
	for _, item := range oldMid[paired:] {
		if err := sp.deleteItem(old, item); err != nil {
			return err
		}
	}
	if paired == len(desiredMid) {
		return nil
	}
	var at int
	if last := prefix + paired - 1; last >= 0 {
		end, err := sp.itemEnd(old, o[last])
		if err != nil {
			return err
		}
		at = sp.nextLineStart(end)
	} else {
		dash, err := sp.dashOf(o[0])
		if err != nil {
			return err
		}
		at = sp.lineStart(dash)
	}
	items := &yaml.Node{Kind: yaml.SequenceNode, Content: desiredMid[paired:]}
	text, err := sp.renderBlock(items, old.Column-1)
	if err != nil {
		return err
	}
	sp.insert(at, text)
	return nil
}

func (sp *splicer) deleteItem(seq, item *yaml.Node) error {
	dash, err := sp.dashOf(item)
	if err != nil {
		return err
	}
	end, err := sp.itemEnd(seq, item)
	if err != nil {
		return err
	}
	sp.edits = append(sp.edits, splice{start: sp.lineStart(dash), end: sp.nextLineStart(end)})
	return nil
}

// replaceScalar rewrites one scalar token where it stands, in old's quoting
// style when the value is still a string; an anchor on it is kept.
func (sp *splicer) replaceScalar(old, desired *yaml.Node, at slot) error {
	start, err := sp.offset(old)
	if err != nil {
		return err
	}
	end, err := sp.scalarEnd(old, at.parentIndent())
	if err != nil {
		return err
	}
	text, err := sp.scalarText(old, desired, at)
	if err != nil {
		return err
	}
	if old.Anchor != "" {
		text = append([]byte("&"+old.Anchor+" "), text...)
	}
	sp.edits = append(sp.edits, splice{start: start, end: end, text: text})
	return nil
}

// scalarText is the token to write for desired in old's place: the desired
// document's own token when old's style does not ask for another and it
// can stand where old stands, else an encoding of it.
func (sp *splicer) scalarText(old, desired *yaml.Node, at slot) ([]byte, error) {
	styled := styledLike(old, desired)
	if d := sp.desired; d != nil && styled == desired && at.desiredIndent() >= 0 {
		start, err := d.offset(desired)
		if err == nil && desired.Anchor == "" && desired.Style&yaml.TaggedStyle == 0 {
			end, err := d.scalarEnd(desired, at.desiredIndent())
			sameLine := err == nil && d.lineOf(start) == d.lineOf(end)
			sameShape := at.desiredIndent() == at.parentIndent() && d.indent == sp.indent && sp.newline == "\n"
			if err == nil && (sameLine || sameShape) {
				return d.text[start:end], nil
			}
		}
	}
	rest, err := sp.renderValue(styled, at)
	if err != nil {
		return nil, err
	}
	text, ok := bytes.CutPrefix(rest, []byte(" "))
	if !ok {
		return nil, errCannotSplice
	}
	return text, nil
}

// replaceValue rewrites a whole value: after its key's colon, or after its
// item's dash. A flow collection stays flow.
func (sp *splicer) replaceValue(old, desired *yaml.Node, at slot) error {
	if old.Anchor != "" || (at.key == nil && at.seq == nil) {
		return errCannotSplice // aliases elsewhere would lose their anchor
	}
	value := shapedLike(old, desired)
	if old.Style&yaml.FlowStyle != 0 && (desired.Kind == yaml.MappingNode || desired.Kind == yaml.SequenceNode) {
		flow := *value
		flow.Style |= yaml.FlowStyle
		value = &flow
	}
	var start, end int
	var err error
	if at.key != nil {
		if start, err = sp.colonEnd(at.key); err == nil {
			end, err = sp.pairEnd(at.key, old)
		}
	} else {
		var dash int
		if dash, err = sp.dashOf(old); err == nil {
			start = dash + 1
			end, err = sp.itemEnd(at.seq, old)
		}
	}
	if err != nil {
		return err
	}
	text, err := sp.renderValue(value, at)
	if err != nil {
		return err
	}
	sp.edits = append(sp.edits, splice{start: start, end: end, text: text})
	return nil
}

func (sp *splicer) insert(at int, text []byte) {
	if at == len(sp.text) && at > 0 && sp.text[at-1] != '\n' {
		text = append([]byte(sp.newline), text...)
	}
	sp.edits = append(sp.edits, splice{start: at, end: at, text: text})
}

// styledLike is desired in old's quoting style, when both are strings and
// the style can carry the value.
func styledLike(old, desired *yaml.Node) *yaml.Node {
	if old.ShortTag() != "!!str" || desired.ShortTag() != "!!str" {
		return desired
	}
	quoting := yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle
	blockStyles := yaml.LiteralStyle | yaml.FoldedStyle
	style := desired.Style
	switch {
	case old.Style&quoting != 0:
		style = old.Style & quoting
	case old.Style&blockStyles != 0 && strings.Contains(desired.Value, "\n"):
		style = old.Style & blockStyles
	}
	if style == desired.Style {
		return desired
	}
	styled := *desired
	styled.Style = style
	return &styled
}

// shapedLike is desired with old's key order and quoting wherever the two
// still share a key, an item or a string: a value rendered anew (a flow
// collection, a value of another kind) reads like the one it replaces.
// Keys old lacks follow its own.
func shapedLike(old, desired *yaml.Node) *yaml.Node {
	old = resolveAlias(old)
	switch {
	case old.Kind == yaml.ScalarNode && desired.Kind == yaml.ScalarNode:
		return styledLike(old, desired)
	case old.Kind == yaml.SequenceNode && desired.Kind == yaml.SequenceNode:
		shaped := *desired
		shaped.Content = make([]*yaml.Node, len(desired.Content))
		for i, item := range desired.Content {
			shaped.Content[i] = item
			if i < len(old.Content) {
				shaped.Content[i] = shapedLike(old.Content[i], item)
			}
		}
		return &shaped
	case old.Kind == yaml.MappingNode && desired.Kind == yaml.MappingNode:
		desiredKeys, ok := mappingByKey(desired)
		if !ok {
			return desired
		}
		shaped := *desired
		shaped.Content = make([]*yaml.Node, 0, len(desired.Content))
		placed := make(map[string]bool, len(desiredKeys))
		for i := 0; i+1 < len(old.Content); i += 2 {
			key := old.Content[i]
			if j, found := desiredKeys[key.Value]; found && key.ShortTag() == "!!str" && !placed[key.Value] {
				placed[key.Value] = true
				shaped.Content = append(shaped.Content, styledLike(key, desired.Content[j]), shapedLike(old.Content[i+1], desired.Content[j+1]))
			}
		}
		for j := 0; j+1 < len(desired.Content); j += 2 {
			if !placed[desired.Content[j].Value] {
				shaped.Content = append(shaped.Content, desired.Content[j], desired.Content[j+1])
			}
		}
		return &shaped
	}
	return desired
}

// --- rendering ---

// encode renders n in the document's indentation style, without the
// comments a node copied from the old text carries: those stay in the text
// where they are.
func (sp *splicer) encode(n *yaml.Node) ([]byte, error) {
	n = withoutComments(n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(sp.indent)
	if sp.compactSeq {
		enc.CompactSeqIndent()
	}
	if err := enc.Encode(n); err != nil {
		return nil, errCannotSplice
	}
	if err := enc.Close(); err != nil {
		return nil, errCannotSplice
	}
	return buf.Bytes(), nil
}

func withoutComments(n *yaml.Node) *yaml.Node {
	c := *n
	c.HeadComment, c.LineComment, c.FootComment = "", "", ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = withoutComments(child)
	}
	return &c
}

// renderValue renders value as it follows a key's colon or an item's dash
// in the slot: " 3", " |\n    text", "\n  a: 1", without a final newline.
func (sp *splicer) renderValue(value *yaml.Node, at slot) ([]byte, error) {
	var out []byte
	var err error
	if at.key != nil {
		out, err = sp.encode(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "k"}, value}})
		out = bytes.TrimPrefix(out, []byte("k:"))
	} else {
		out, err = sp.encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{value}})
		out = bytes.TrimPrefix(out, []byte("-"))
	}
	if err != nil {
		return nil, err
	}
	return sp.indented(bytes.TrimSuffix(out, []byte("\n")), at.parentIndent(), false), nil
}

// renderBlock renders a block (pairs or items) to insert as whole lines at
// column indent.
func (sp *splicer) renderBlock(n *yaml.Node, indent int) ([]byte, error) {
	out, err := sp.encode(n)
	if err != nil {
		return nil, err
	}
	return sp.indented(out, indent, true), nil
}

// indented prefixes each non-empty line after the first (and the first when
// first is set) with indent spaces, in the document's line ending.
func (sp *splicer) indented(text []byte, indent int, first bool) []byte {
	pad := strings.Repeat(" ", indent)
	lines := strings.Split(string(text), "\n")
	for i, line := range lines {
		if line != "" && (i > 0 || first) {
			lines[i] = pad + line
		}
	}
	return []byte(strings.Join(lines, sp.newline))
}
