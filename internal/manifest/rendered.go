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
	if yamledit.Equivalent(ws.oldTree(loc), w.node) {
		return true, nil
	}
	return false, nil
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
		current.tree, _ = yamledit.Decode(file.content[s.Body:s.End]) // the index parsed it once: it is valid
	}
	return current.tree
}

// parsedDesired is the desired document as a parser reads it, for the
// in-place editor: it copies the desired text's tokens by their positions
// and compares quoting, neither of which a rendered tree records. top is
// returned when it is already the parse.
func (ws *workspace) parsedDesired(w write, body []byte, top *yaml.Node) *yaml.Node {
	if w.node == nil || top != w.node {
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
