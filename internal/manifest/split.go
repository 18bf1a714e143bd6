package manifest

import "bytes"

// markerKind says whether a section opens with a "---" line, and whether
// that line also carries content ("--- {a: 1}"), in which case the body
// starts on the marker line itself.
type markerKind int

const (
	noMarker markerKind = iota
	plainMarker
	markerWithContent
)

// section is one document's slice of a file: from its "---" marker line (or
// the start of the file) up to the next marker line. Splitting on marker
// lines is exact for YAML: a line starting with "---" and a blank is a
// document marker wherever it appears, even inside what looks like a block
// scalar.
type section struct {
	start, end int // [start, end) in the file content
	body       int // where the replaceable body starts: after the marker line and leading comments
	marker     markerKind
}

// splitSections cuts content into sections. It never fails: what the
// sections hold is judged by the parser, not here.
func splitSections(content []byte) []section {
	var sections []section
	current := section{start: 0}
	for lineStart := 0; lineStart < len(content); {
		lineEnd := nextLine(content, lineStart)
		if kind := markerOf(content[lineStart:lineEnd]); kind != noMarker {
			if lineStart > current.start {
				current.end = lineStart
				sections = append(sections, current)
			}
			current = section{start: lineStart, marker: kind}
		}
		lineStart = lineEnd
	}
	current.end = len(content)
	if current.end > current.start || len(sections) == 0 {
		sections = append(sections, current)
	}
	for i := range sections {
		sections[i].body = bodyStart(content, sections[i])
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
func markerOf(line []byte) markerKind {
	if !bytes.HasPrefix(line, []byte("---")) {
		return noMarker
	}
	rest := line[3:]
	if len(rest) > 0 && !isBlank(rest[0]) {
		return noMarker // "----" or "---x" is content, not a marker
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) == 0 || rest[0] == '#' {
		return plainMarker
	}
	return markerWithContent
}

// bodyStart skips a section's marker line and leading blank, comment and
// directive lines: they describe the document and survive its replacement.
func bodyStart(content []byte, s section) int {
	switch s.marker {
	case markerWithContent:
		return s.start + len("---")
	case plainMarker:
		return skipLeadingNonContent(content, nextLine(content, s.start), s.end)
	}
	return skipLeadingNonContent(content, s.start, s.end)
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
