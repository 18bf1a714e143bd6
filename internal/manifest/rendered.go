package manifest

import (
	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// This file holds what lets a plan skip parsing: an Upsert's own tree
// (Upsert.Node) and what the index knows of a document's text (canonical,
// or its cached tree).

// replaceRendered plans an upsert of the operator's rendering against a
// document no kustomization override governs and no namespace is left out
// of: an operator-written document is replaced whole, without parsing it,
// and, when the upsert carries its tree, one equivalent to the object is
// left as it is without parsing the desired text. done is false when the
// in-place editor must decide (a document a person formatted).
func (ws *workspace) replaceRendered(file *fileEdit, loc location, w write, body []byte, doc *document) (bool, *Refusal) {
	if file.original.docs[loc.section].canonical {
		// Both texts are the operator's renderings, of two objects that
		// differ (the bytes do): there is no comment, order or quoting to
		// keep, and the editor would write body itself.
		return true, ws.rewrite(file, loc, w, body, doc.written(true, nil))
	}
	if w.node == nil {
		return false, nil // the editor compares with the parse it has
	}
	// The rendered tree may call a scalar plain that the encoder quoted, so
	// it is at most as often Equivalent as the parsed one: a yes is sound.
	return yamledit.Equivalent(ws.oldTree(loc), w.node), nil
}

// oldTree is the parsed text of the document at loc: cached on the index's
// document by its first parse, so a document a person formatted is parsed
// once, not once a plan.
func (ws *workspace) oldTree(loc location) *yaml.Node {
	file := ws.ix.manifests[loc.path]
	current := file.docs[loc.section]
	if current.tree == nil {
		ws.parses++
		s := file.sections[loc.section]
		tree, _ := yamledit.Decode(file.content[s.Body:s.End]) // the index parsed it once: it is valid
		ws.ix.trees.keep(current, tree)
	}
	return current.tree
}

// maxCachedTrees bounds the parsed documents an index keeps. A parse
// weighs several times its text (about 3.6 KiB for a 470-byte ConfigMap
// with a comment), so of a subtree of hand-kept files only the last ones
// edited stay parsed: an object edited again and again is parsed once, and
// the memory stays bounded however many files people formatted.
const maxCachedTrees = 1024

// treeRing holds the documents whose tree the index keeps, oldest first
// out: keeping one more than maxCachedTrees drops the oldest one's tree.
type treeRing struct {
	docs []*document
	next int
}

// keep gives doc its tree and makes room for it.
func (r *treeRing) keep(doc *document, tree *yaml.Node) {
	doc.tree = tree
	if tree == nil || doc.inRing {
		return
	}
	doc.inRing = true
	if len(r.docs) < maxCachedTrees {
		r.docs = append(r.docs, doc)
		return
	}
	oldest := r.docs[r.next]
	oldest.tree, oldest.inRing = nil, false
	r.docs[r.next] = doc
	r.next = (r.next + 1) % maxCachedTrees
}

// parsedDesired is the desired document as a parser reads it, for the
// in-place editor: it copies the desired text's tokens by their positions
// and compares quoting, neither of which a rendered tree records. top is
// returned when it is already the parse; a rendering without its tree
// (nil) is parsed here, the first time an edit needs it.
func (ws *workspace) parsedDesired(w write, body []byte, top *yaml.Node) *yaml.Node {
	if top != nil && (w.node == nil || top != w.node) {
		return top
	}
	ws.parses++
	parsed, err := yamledit.Decode(body)
	if err != nil || parsed == nil {
		return top
	}
	return parsed
}

// overridden reports whether a kustomization governing the file at p
// overrides replicas or images: the document then keeps the source values
// (editThrough), which needs the old and the new tree.
func (ws *workspace) overridden(p string) bool {
	for _, k := range ws.governing(p) {
		if parsed := ws.kustomization(k); len(parsed.Replicas) > 0 || len(parsed.Images) > 0 {
			return true
		}
	}
	return false
}
