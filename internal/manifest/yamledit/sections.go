package yamledit

import "bytes"

// Marker says whether a section opens with a "---" line, and whether
// that line also carries content ("--- {a: 1}"), in which case the body
// starts on the marker line itself.
type Marker int

const (
	// NoMarker: the section is the file's first and has no "---" line.
	NoMarker Marker = iota
	// PlainMarker: a "---" line, perhaps with a comment.
	PlainMarker
	// MarkerWithContent: "--- {a: 1}", the body starts on the marker line.
	MarkerWithContent
)

// Section is one document's slice of a file: from its "---" marker line (or
// the start of the file) up to the next marker line. Splitting on marker
// lines is exact for YAML: a line starting with "---" and a blank is a
// document marker wherever it appears, even inside what looks like a block
// scalar.
type Section struct {
	Start, End int // [Start, End) in the file content
	Body       int // where the replaceable body starts: after the marker line and leading comments
	Marker     Marker
}

// Sections cuts content into sections. It never fails: what the
// sections hold is judged by the parser, not here.
func Sections(content []byte) []Section {
	var sections []Section
	current := Section{Start: 0}
	for lineStart := 0; lineStart < len(content); {
		lineEnd := nextLine(content, lineStart)
		if kind := markerOf(content[lineStart:lineEnd]); kind != NoMarker {
			if lineStart > current.Start {
				current.End = lineStart
				sections = append(sections, current)
			}
			current = Section{Start: lineStart, Marker: kind}
		}
		lineStart = lineEnd
	}
	current.End = len(content)
	if current.End > current.Start || len(sections) == 0 {
		sections = append(sections, current)
	}
	for i := range sections {
		sections[i].Body = bodyStart(content, sections[i])
	}
	return sections
}

// nextLine returns the index just past the newline ending the line that
// starts at from, or len(content).
func nextLine(content []byte, from int) int {
	if i := bytes.IndexByte(content[from:], '\n'); i >= 0 {
		return from + i + 1
	}
	return len(content)
}

// markerOf classifies one line (with its newline, if any).
func markerOf(line []byte) Marker {
	if !bytes.HasPrefix(line, []byte("---")) {
		return NoMarker
	}
	rest := line[3:]
	if len(rest) > 0 && !isBlank(rest[0]) {
		return NoMarker // "----" or "---x" is content, not a marker
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) == 0 || rest[0] == '#' {
		return PlainMarker
	}
	return MarkerWithContent
}

// bodyStart skips a section's marker line and leading blank, comment and
// directive lines: they describe the document and survive its replacement.
func bodyStart(content []byte, s Section) int {
	switch s.Marker {
	case MarkerWithContent:
		return s.Start + len("---")
	case PlainMarker:
		return skipLeadingNonContent(content, nextLine(content, s.Start), s.End)
	}
	return skipLeadingNonContent(content, s.Start, s.End)
}

func skipLeadingNonContent(content []byte, from, end int) int {
	if from == 0 && bytes.HasPrefix(content, []byte(byteOrderMark)) {
		from = len(byteOrderMark) // it belongs to the file, not to the document
	}
	for from < end {
		lineEnd := min(nextLine(content, from), end)
		trimmed := bytes.TrimLeft(content[from:lineEnd], " \t\r\n")
		if len(trimmed) > 0 && trimmed[0] != '#' && content[from] != '%' {
			return from
		}
		from = lineEnd
	}
	return end
}

// byteOrderMark is UTF-8's, which some editors put at the start of a file.
const byteOrderMark = "\ufeff"

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}
