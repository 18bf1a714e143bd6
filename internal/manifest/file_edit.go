package manifest

import (
	"bytes"
	"fmt"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// noSection stands for "no existing section" in mixingRefusal.
const noSection = -1

// fileEdit is the working copy of one file during a plan.
type fileEdit struct {
	path     string
	original *manifestFile // nil for a file this plan creates
	docs     []*document   // current document per original section
	// bodies and removed are nil until the plan replaces or removes a
	// section: most files a plan touches are new.
	bodies       map[int][]byte
	removed      map[int]bool
	appended     [][]byte
	appendedDocs []*document
}

// untouched reports whether the plan wrote nothing to an existing file.
func (f *fileEdit) untouched() bool {
	return f.original != nil && len(f.bodies) == 0 && len(f.removed) == 0 && len(f.appended) == 0
}

// holds reports whether section i of the original is exactly body.
func (f *fileEdit) holds(i int, body []byte) bool {
	if f.original.released {
		return f.original.holds(body) // its one section is the whole file
	}
	return bytes.Equal(f.body(i), body)
}

// body is the replaceable text of a section as it stands in the original
// (never one whose bytes the index let go: see holds).
func (f *fileEdit) body(i int) []byte {
	s := f.original.sections[i]
	return f.original.content[s.Body:s.End]
}

func (f *fileEdit) remove(i int) {
	if f.removed == nil {
		f.removed = map[int]bool{}
	}
	f.removed[i] = true
	f.docs[i] = nil
}

// replace puts body, the text of doc, in place of section i.
func (f *fileEdit) replace(i int, body []byte, doc *document) {
	if f.bodies == nil {
		f.bodies = map[int][]byte{}
	}
	f.bodies[i] = body
	f.docs[i] = doc
}

// otherDocuments lists the documents the file will hold besides section
// except (noSection for a new document).
func (f *fileEdit) otherDocuments(except int) []*document {
	var others []*document
	for i, doc := range f.docs {
		if doc != nil && i != except {
			others = append(others, doc)
		}
	}
	return append(others, f.appendedDocs...)
}

// mixingRefusal enforces the co-mingling rules: a sensitive document shares
// its file with nothing, and a plaintext one never sits beside ciphertext.
func (f *fileEdit) mixingRefusal(w write, except int) *Refusal {
	for _, other := range f.otherDocuments(except) {
		switch {
		case w.sensitive:
			return &Refusal{ID: w.id, Path: f.path, Reason: RefusalSensitiveShared,
				Detail: fmt.Sprintf("its file also holds %s", other.id)}
		case other.encrypted:
			return &Refusal{ID: w.id, Path: f.path, Reason: RefusalPlaintextBesideEncrypted,
				Detail: fmt.Sprintf("its file holds the encrypted %s", other.id)}
		}
	}
	return nil
}

// render produces the file's new content, or nil when no document is left
// (the file is then deleted). Untouched sections are copied byte for byte.
func (f *fileEdit) render() []byte {
	content, _ := f.renderParsed()
	return content
}

// renderParsed is render plus the parsed file for the index, built from the
// documents the plan already holds, so that folding the commit back into the
// index parses nothing again. It is nil when a section of the new content is
// not one the plan wrote (the index then parses the file).
func (f *fileEdit) renderParsed() ([]byte, *manifestFile) {
	if len(f.otherDocuments(noSection)) == 0 {
		return nil, nil
	}
	if f.untouched() {
		return f.original.content, f.original // nothing written: the caller sees no change
	}
	if f.original != nil && f.original.released {
		return f.renderReleased()
	}
	if f.original == nil && len(f.appended) == 1 {
		// A new file of one document is that document's bytes, shared
		// rather than copied: the index and the blob cache then keep the
		// rendering the write carried, not a second copy of every file.
		doc := f.appended[0]
		return parsedFile(doc, map[span]*document{{0, len(doc)}: f.appendedDocs[0]})
	}
	var out bytes.Buffer
	out.Grow(f.renderedSize()) // the file stays in the index: no doubled buffer
	written := map[span]*document{}
	if f.original != nil {
		content := f.original.content
		for i, s := range f.original.sections {
			body, replaced := f.bodies[i]
			switch {
			case f.removed[i]:
			case !replaced:
				at := out.Len() - s.Start
				written[span{at + s.Body, at + s.End}] = f.original.docs[i]
				out.Write(content[s.Start:s.End])
			default:
				out.Write(content[s.Start:s.Body])
				if s.Marker == yamledit.MarkerWithContent {
					out.WriteByte('\n') // the old body began on the marker line
				}
				written[span{out.Len(), out.Len() + len(body)}] = f.docs[i]
				out.Write(body)
			}
		}
	}
	for i, doc := range f.appended {
		at := appendDocument(&out, doc)
		written[span{at, at + len(doc)}] = f.appendedDocs[i]
	}
	return parsedFile(out.Bytes(), written)
}

// renderedSize bounds the size of the rendered file: the original, every
// new body and appended document, and a marker and newline for each.
func (f *fileEdit) renderedSize() int {
	n := 0
	if f.original != nil {
		n = len(f.original.content)
	}
	for _, body := range f.bodies {
		n += len(body) + 1
	}
	for _, doc := range f.appended {
		n += len(doc) + len("\n---\n")
	}
	return n
}

// parsedFile is content with its sections and the document of each, from
// written (by the span of each section's body); nil when a section is not
// one the plan wrote.
func parsedFile(content []byte, written map[span]*document) ([]byte, *manifestFile) {
	sections := yamledit.Sections(content)
	file := &manifestFile{content: content, sections: sections, docs: make([]*document, len(sections))}
	for i, s := range sections {
		doc, known := written[span{s.Body, s.End}]
		if !known {
			return content, nil
		}
		file.docs[i] = doc
	}
	return content, file
}

// span is a section body's [start, end) in a rendered file.
type span struct{ start, end int }

// appendDocument adds a document after out's content: alone when there is
// nothing but whitespace, straight after a trailing bare "---", and after a
// new "---" otherwise. It returns where the document starts.
func appendDocument(out *bytes.Buffer, doc []byte) int {
	existing := out.Bytes()
	switch {
	case len(bytes.TrimSpace(existing)) == 0:
		out.Reset()
	case endsWithBareMarker(existing):
	default:
		if existing[len(existing)-1] != '\n' {
			out.WriteByte('\n')
		}
		out.WriteString("---\n")
	}
	at := out.Len()
	out.Write(doc)
	return at
}

func endsWithBareMarker(content []byte) bool {
	trimmed := bytes.TrimRight(content, " \t\r\n")
	lineStart := bytes.LastIndexByte(trimmed, '\n') + 1
	return string(trimmed[lineStart:]) == "---" && len(trimmed) < len(content)
}
