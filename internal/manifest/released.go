package manifest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// This file holds the files whose bytes the index let go. A file that is
// exactly the operator's rendering of one object (a canonical single
// document) is what nearly every mirrored file is, and a change to it
// replaces it whole: no plan needs its old text, only to know whether a new
// rendering is the same. The index keeps such a file's document and the
// SHA-256 of its bytes, not the bytes: at 50,000 ConfigMaps the renderings
// were 13.5 MB of the operator's 67 MB of live heap, kept for nothing.
// The few plans that do need the old text (an edit through a kustomization
// override, a document the operator did not render, an object placed into
// that file beside the one it holds) fail with *ContentNeededError; the
// caller reads those files from Git (Restore) and plans again.

// ContentNeededError is a plan that needs the bytes of files the index let
// go. Nothing was planned; Restore the files and plan again.
type ContentNeededError struct {
	Paths []string // sorted
}

func (e *ContentNeededError) Error() string {
	return fmt.Sprintf("planning needs the content of %d file(s) the index let go: %s", len(e.Paths), strings.Join(e.Paths, ", "))
}

// releasable reports whether the index may let the file's bytes go: one
// document, the operator's rendering of its object (never encrypted: a
// sensitive object's ciphertext is reused by Document), the whole file.
func releasable(f *manifestFile) bool {
	if f.released || len(f.docs) != 1 || len(f.sections) != 1 {
		return false
	}
	doc, s := f.docs[0], f.sections[0]
	return doc != nil && doc.canonical && !doc.encrypted && doc.tree == nil &&
		s.Start == 0 && s.Body == 0 && s.End == len(f.content)
}

// release lets the file's bytes go, keeping their sum.
func (f *manifestFile) release() {
	f.sum = sha256.Sum256(f.content)
	f.content, f.sections, f.released = nil, nil, true
}

// releaseLearnt lets go the bytes of the files plans learnt to be the
// operator's renderings (read from Git after a restart, say, and found
// unchanged), once a commit lands: not during a plan, which may still need
// them.
func (ix *Index) releaseLearnt() {
	for _, p := range ix.learnt {
		if f, ok := ix.manifests[p]; ok && releasable(f) {
			f.release()
		}
	}
	ix.learnt = nil
}

// holds reports whether the file's content is exactly content.
func (f *manifestFile) holds(content []byte) bool {
	if f.released {
		return sha256.Sum256(content) == f.sum
	}
	return bytes.Equal(f.content, content)
}

// Released lists the files whose bytes the index let go, by path, for a
// test or a caller that reads them back. The slice is the caller's.
func (ix *Index) Released() []string {
	var out []string
	for p, f := range ix.manifests {
		if f.released {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Restore gives files the index let go their bytes again, by path, for a
// plan that needs them (ContentNeededError): what the index knew of them
// (their document, that it is the operator's rendering) stays. Content
// whose sum is not the one the index kept is refused: it is not the file
// the index describes.
func (ix *Index) Restore(files map[string][]byte) error {
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f, ok := ix.manifests[p]
		if !ok || !f.released {
			return fmt.Errorf("restoring %q: not a file whose content the index let go", p)
		}
		if !f.holds(files[p]) {
			return fmt.Errorf("restoring %q: the content read is not the file the index describes", p)
		}
	}
	for p, content := range files {
		f := ix.manifests[p]
		f.content, f.sections, f.released = content, yamledit.Sections(content), false
	}
	return nil
}

// Known reports whether the index knows the documents of the file at p: a
// manifest file read, or one whose bytes it let go; not a pending one.
func (ix *Index) Known(p string) bool {
	_, ok := ix.manifests[p]
	return ok
}

// Carry indexes at p the file from holds at fromPath, for a load that
// knows the two to be the same bytes (the same blob id): what from knew of
// it, parsed or let go, needs no read and no parse. It reports false when
// from has no manifest file at fromPath or p is not one the index may
// hold as a manifest.
func (ix *Index) Carry(p string, from *Index, fromPath string) bool {
	old, ok := from.manifests[fromPath]
	if !ok {
		return false
	}
	rel, err := ix.relative(p)
	if err != nil || classify(rel) != classManifest {
		return false
	}
	file := &manifestFile{content: old.content, sections: old.sections, sum: old.sum, released: old.released,
		docs: make([]*document, len(old.docs))}
	for i, doc := range old.docs {
		if doc != nil {
			carried := *doc
			carried.tree, carried.inRing = nil, false // the ring is the old index's
			file.docs[i] = &carried
		}
	}
	ix.remove(p, nil)
	ix.register(p, file)
	for _, problem := range from.problems[fromPath] {
		problem.Path = p // what Check refuses in it, refused here too
		ix.problems[p] = append(ix.problems[p], problem)
	}
	return true
}

// needContent notes that the plan needs the bytes of the file at p, which
// the index let go.
func (ws *workspace) needContent(p string) {
	if !slices.Contains(ws.needed, p) {
		ws.needed = append(ws.needed, p)
	}
}

// renderReleased is renderParsed for a file whose original bytes the index
// let go: its one document replaced, or removed, with any documents placed
// after it. Keeping the document unchanged beside a new one needs its
// bytes, which place asked for instead (needContent).
func (f *fileEdit) renderReleased() ([]byte, *manifestFile) {
	body, replaced := f.bodies[0]
	if replaced && len(f.appended) == 0 {
		return parsedFile(body, map[span]*document{{0, len(body)}: f.docs[0]})
	}
	var out bytes.Buffer
	out.Grow(f.renderedSize())
	written := map[span]*document{}
	if replaced {
		written[span{0, len(body)}] = f.docs[0]
		out.Write(body)
	}
	for i, doc := range f.appended {
		at := appendDocument(&out, doc)
		written[span{at, at + len(doc)}] = f.appendedDocs[i]
	}
	return parsedFile(out.Bytes(), written)
}
