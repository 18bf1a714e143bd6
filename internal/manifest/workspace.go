package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/gitfile"
	"github.com/configbutler/gitops-reverser/internal/manifest/kustomization"
	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// workspace holds the files one plan touches and the objects it writes.
type workspace struct {
	ix        *Index
	placement Placement
	files     map[string]*fileEdit
	objects   []ObjectChange
	parses    int // YAML documents decoded, for benchmarks
	// resources are the kustomizations' resources: entries to add and remove.
	resources kustomization.Edits
	// root is the kustomization new files go beside, once looked up.
	root *kustomizationStep
	// needed are files whose bytes the index let go and this plan needs
	// (ContentNeededError).
	needed []string
}

func (ws *workspace) record(w write, p string, action Action) {
	ws.objects = append(ws.objects, ObjectChange{ID: w.id, Path: p, Action: action})
}

func (ws *workspace) apply(w write) *Refusal {
	switch loc, found := ws.ix.find(w.id); {
	case w.remove && found:
		ws.edit(loc.path).remove(loc.section)
		ws.record(w, loc.path, ActionDelete)
		return nil
	case w.remove:
		return nil // already gone
	case found && !ws.fits(loc.path):
		return ws.move(loc, w)
	case found:
		return ws.replace(loc, w)
	}
	return ws.place(w)
}

// fits reports whether every component of p below the root is one a file
// system can hold. The root is the target's own; it is never moved.
func (ws *workspace) fits(p string) bool {
	rel, _ := ws.ix.relative(p) // an indexed path is below the root
	for _, component := range strings.Split(rel, "/") {
		if len(component) > MaxSegmentBytes {
			return false
		}
	}
	return true
}

// move places an existing object anew when its file cannot be checked out
// (written before long components were shortened): edited in place, the
// branch would stay one no clone can check out. An object that cannot be
// placed is edited where it is, as before.
func (ws *workspace) move(loc location, w write) *Refusal {
	needed := len(ws.needed)
	if refusal := ws.place(w); refusal != nil {
		return ws.replace(loc, w)
	}
	if len(ws.needed) > needed {
		return nil // nothing placed: planned again once the file is read back
	}
	ws.edit(loc.path).remove(loc.section)
	moved := &ws.objects[len(ws.objects)-1]
	moved.Action, moved.Placement = ActionUpdate, ""
	return nil
}

// replace writes an existing document in place, or nothing when the new
// document is the same.
func (ws *workspace) replace(loc location, w write) *Refusal {
	file := ws.edit(loc.path)
	body := withTrailingNewline(w.yaml)
	if file.holds(loc.section, body) {
		if w.rendered {
			// The text is the operator's rendering: learnt for free, so the
			// next change (after a restart, say) replaces it unparsed.
			current := file.original.docs[loc.section]
			if !current.canonical {
				ws.ix.learnt = append(ws.ix.learnt, loc.path)
			}
			current.canonical, current.tree = true, nil // the ring forgets it in its turn
		}
		return nil
	}
	top, doc, refusal := ws.checkNewDocument(w, body, loc.path)
	if refusal != nil {
		return refusal
	}
	if w.sensitive {
		// Ciphertext changes on every encryption: the whole document is
		// written again, and only bytes tell a no-op.
		if refusal := file.mixingRefusal(w, loc.section); refusal != nil {
			return refusal
		}
		file.replace(loc.section, body, doc)
		ws.record(w, loc.path, ActionUpdate)
		return nil
	}
	bare := ws.namespaceless(loc, w)
	if w.rendered && !bare && !ws.overridden(loc.path) {
		done, refusal := ws.replaceRendered(file, loc, w, body, doc)
		if done {
			return refusal
		}
		top = ws.parsedDesired(w, body, top)
	}
	if file.original.released {
		ws.needContent(loc.path) // the in-place editor reads the old text
		return nil
	}
	if top == nil {
		// A rendering the editor must read after all.
		if top = ws.parsedDesired(w, body, nil); top == nil {
			return unparsable(w, loc.path)
		}
	}
	old := file.body(loc.section)
	desiredText := body
	if bare {
		// The kustomization sets the namespace: the document keeps
		// leaving it out, and the diff is only the changed values.
		top, desiredText = withoutNamespace(ws.parsedDesired(w, body, top)), nil
	}
	oldTop := ws.oldTree(loc)
	if oldTop != nil {
		if adjusted, through := ws.editThrough(loc.path, oldTop, top); through {
			// The desired bytes no longer say what the file must read.
			top, desiredText = adjusted, nil
		}
	}
	if yamledit.Equivalent(oldTop, top) {
		return nil
	}
	edited, tree := ws.editedBody(old, oldTop, body, desiredText, top)
	verbatim := bytes.Equal(edited, body)
	return ws.rewrite(file, loc, w, edited, writtenDocument(doc, bare && !verbatim).written(w.rendered && verbatim, tree))
}

// rewrite puts a plaintext document's new text in place of the old one,
// unless the file's other documents or its name forbid it.
func (ws *workspace) rewrite(file *fileEdit, loc location, w write, text []byte, doc *document) *Refusal {
	if refusal := file.mixingRefusal(w, loc.section); refusal != nil {
		return refusal
	}
	if isSopsPath(loc.path) {
		// The type is no longer sensitive: its file still says SOPS, and
		// tools (and people) would take the plaintext in it for ciphertext.
		return &Refusal{ID: w.id, Path: loc.path, Reason: RefusalInvalidPlacement,
			Detail: "a plaintext object is not written into a .sops file; move or delete the file"}
	}
	file.replace(loc.section, text, doc)
	ws.record(w, loc.path, ActionUpdate)
	return nil
}

// namespaceless reports whether the document at loc, the object w writes,
// names no namespace where the object has one: a kustomization sets it
// (find matched it by answersTo), and an edit keeps it out. A sensitive
// document is written whole, namespace and all: its MAC covers every value.
func (ws *workspace) namespaceless(loc location, w write) bool {
	written := ws.ix.manifests[loc.path].docs[loc.section].id
	return !w.sensitive && written.Namespace == "" && w.id.Namespace != ""
}

// writtenDocument is doc as the file holds it: without its namespace when
// the text left it out.
func writtenDocument(doc *document, withoutNamespace bool) *document {
	if !withoutNamespace {
		return doc
	}
	bare := *doc
	bare.id.Namespace = ""
	return &bare
}

// editedBody is the old document edited in place to read as the new one,
// keeping its comments and layout, or the new bytes when the editor cannot
// do that safely. The edited text is parsed once to prove it reads exactly
// as the new document; anything else is never written. That parse is
// returned with an edited text (nil with the new bytes), for the index to
// keep: the next edit of the document need not parse it again.
func (ws *workspace) editedBody(old []byte, oldTop *yaml.Node, body, desiredText []byte, top *yaml.Node) ([]byte, *yaml.Node) {
	if oldTop == nil {
		return body, nil
	}
	edited, err := yamledit.Splice(old, oldTop, desiredText, top)
	if err != nil {
		return body, nil
	}
	if bytes.Equal(edited, body) {
		return body, nil
	}
	ws.parses++
	editedTop, err := yamledit.Decode(edited)
	if err != nil || editedTop == nil || !yamledit.Same(editedTop, top) {
		return body, nil
	}
	return edited, editedTop
}

// checkNewDocument validates an upsert's YAML: one document, a Kubernetes
// object, the object the upsert names, and encrypted when sensitive.
func (ws *workspace) checkNewDocument(w write, body []byte, target string) (*yaml.Node, *document, *Refusal) {
	refuse := func(reason RefusalReason, format string, args ...any) (*yaml.Node, *document, *Refusal) {
		return nil, nil, &Refusal{ID: w.id, Path: target, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if w.rendered && !topLevelSops(body) {
		// The operator's own rendering of the object the write names: one
		// plaintext document of that object, as sanitize writes it. Nothing
		// is parsed until an edit needs its tree (parsedDesired); a
		// replay's write into an empty or matching subtree needs none. An
		// object with a top-level sops field is read as a parse reads it
		// (encrypted), as a load does (renderedFile).
		id := w.id
		id.Resource = "" // unknown from a file, as for every document
		return w.node, &document{id: id}, nil
	}
	if sections := yamledit.Sections(body); len(sections) != 1 || sections[0].Marker != yamledit.NoMarker {
		return refuse(RefusalInvalidDocument, "the YAML must be one document without '---' markers")
	}
	top, err := w.node, error(nil)
	if top == nil {
		ws.parses++
		top, err = yamledit.Decode(body)
	}
	if err != nil {
		return refuse(RefusalInvalidDocument, "%v", err)
	}
	if top == nil {
		return refuse(RefusalInvalidDocument, "the YAML is empty")
	}
	doc, err := objectOf(top)
	if err != nil {
		return refuse(RefusalInvalidDocument, "%v", err)
	}
	if !doc.id.SameObject(w.id) {
		return refuse(RefusalInvalidDocument, "the YAML describes %s", doc.id)
	}
	doc.id = sharedStrings(doc.id, w.id)
	if w.sensitive && !doc.encrypted {
		return refuse(RefusalNotEncrypted, "a sensitive object must arrive SOPS-encrypted")
	}
	return top, doc, nil
}

// unparsable refuses a rendering the in-place editor needed to read and
// could not: the operator's renderings always parse, so this is a defect
// shown as a refusal rather than a crash.
func unparsable(w write, p string) *Refusal {
	return &Refusal{ID: w.id, Path: p, Reason: RefusalInvalidDocument, Detail: "the rendered YAML does not parse"}
}

// sharedStrings is parsed, the identity a document is written with, with
// the strings of id, the same object as the write names it, wherever they
// are equal. The index keeps a document's identity for as long as the file
// exists: the parse's own copies of the name and namespace were about
// 80 bytes per mirrored object beside the ones the write already holds.
func sharedStrings(parsed, id ObjectID) ObjectID {
	out := parsed
	out.Group, out.Kind, out.Namespace, out.Name = id.Group, id.Kind, id.Namespace, id.Name // SameObject: equal
	if parsed.Version == id.Version {
		out.Version = id.Version
	}
	return out
}

// place writes a new object where the declared placement puts it, else at
// its canonical path. A path several objects render to becomes a
// multi-document file.
func (ws *workspace) place(w write) *Refusal {
	target, source, refusal := ws.newPath(w)
	if refusal != nil {
		return refusal
	}
	if ws.nameDerived(w, source) {
		target = EscapedPath(target)
	}
	if rel, _ := ws.ix.relative(target); classify(rel) != classManifest {
		return &Refusal{ID: w.id, Path: target, Reason: RefusalAuxiliaryPath,
			Detail: "the new object's path is an auxiliary file the operator never manages"}
	}
	body := withTrailingNewline(w.yaml)
	top, doc, refusal := ws.checkNewDocument(w, body, target)
	if refusal != nil {
		return refusal
	}
	canonical, tree := w.rendered, (*yaml.Node)(nil)
	if source == PlacementKustomization && ws.rootSetsNamespace(w) {
		// Written the way the documents beside it are: the root's
		// kustomization sets the namespace.
		if top = ws.parsedDesired(w, body, top); top == nil {
			return unparsable(w, target)
		}
		edited, editedTree := ws.editedBody(body, top, body, nil, withoutNamespace(top))
		verbatim := bytes.Equal(edited, body)
		body, doc, tree = edited, writtenDocument(doc, !verbatim), editedTree
		canonical = canonical && verbatim
	}
	doc = doc.written(canonical, tree)
	_, createdHere := ws.files[target]
	if w.sensitive && (ws.ix.Has(target) || createdHere) {
		return &Refusal{ID: w.id, Path: target, Reason: RefusalSensitiveShared,
			Detail: "a sensitive object is never appended to an existing file"}
	}
	file := ws.edit(target)
	if refusal := file.mixingRefusal(w, noSection); refusal != nil {
		return refusal
	}
	if _, replaced := file.bodies[0]; file.original != nil && file.original.released && file.docs[0] != nil && !replaced {
		ws.needContent(target) // the document there is kept, as it is, beside the new one
		return nil
	}
	file.appended = append(file.appended, body)
	file.appendedDocs = append(file.appendedDocs, doc)
	ws.record(w, target, ActionCreate)
	ws.objects[len(ws.objects)-1].Placement = source
	if source == PlacementKustomization {
		entry, _ := kustomization.ResourceEntry(ws.root.path, target)
		ws.resources.Of(ws.root.path).Add = append(ws.resources.Of(ws.root.path).Add, entry)
	}
	return nil
}

// newPath is the path for a new object, by the placement ladder: its
// type's template, else the default template (declared); else beside the
// subtree's one kustomization; else the canonical path. A template that
// does not render safely refuses the object; falling back would write where
// the user said not to.
func (ws *workspace) newPath(w write) (string, PlacementSource, *Refusal) {
	template, declared := ws.placement.template(w.id)
	if !declared {
		if root := ws.kustomizationRoot(); root.usable && ws.rootBuilds(w) {
			if target, err := besideKustomization(root.path, w.id, w.sensitive); err == nil {
				return target, PlacementKustomization, nil
			}
		}
		target, err := CanonicalPath(ws.ix.root, w.id, w.sensitive)
		if err != nil {
			return "", "", &Refusal{ID: w.id, Reason: RefusalIncompleteIdentity, Detail: err.Error()}
		}
		return target, PlacementCanonical, nil
	}
	target, err := RenderPath(ws.ix.root, template, w.id, w.sensitive)
	switch {
	case errors.Is(err, errIncomplete):
		return "", "", &Refusal{ID: w.id, Reason: RefusalIncompleteIdentity, Detail: err.Error()}
	case err != nil:
		return "", "", &Refusal{ID: w.id, Reason: RefusalInvalidPlacement, Detail: err.Error()}
	}
	return target, PlacementDeclared, nil
}

// nameDerived reports whether the new file's name comes from the object's
// name, so that a name kustomize would misread is escaped: a declared
// template naming a build file outright is refused instead.
func (ws *workspace) nameDerived(w write, source PlacementSource) bool {
	if source != PlacementDeclared {
		return true
	}
	template, _ := ws.placement.template(w.id)
	return strings.Contains(path.Base(template), "{name}")
}

// edit returns the working copy of the file at p, creating it on first use.
func (ws *workspace) edit(p string) *fileEdit {
	if file, ok := ws.files[p]; ok {
		return file
	}
	file := &fileEdit{path: p}
	if original, ok := ws.ix.manifests[p]; ok {
		file.original = original
		file.docs = append([]*document(nil), original.docs...)
	}
	ws.files[p] = file
	return file
}

// changes renders every touched file and keeps those that differ, with the
// kustomizations' resources: lists edited to match. parsed holds, by path,
// the files the plan already holds parsed (see renderParsed).
func (ws *workspace) changes() (changes []gitfile.Change, parsed map[string]*manifestFile, err error) {
	parsed = map[string]*manifestFile{}
	var deleted []string
	for p, file := range ws.files {
		if file.untouched() {
			continue
		}
		content, rendered := file.renderParsed()
		switch {
		case content == nil && file.original != nil:
			changes = append(changes, gitfile.Change{Path: p, Delete: true})
			deleted = append(deleted, p)
		case content == nil:
		case file.original != nil && file.original.holds(content):
		default:
			changes = append(changes, gitfile.Change{Path: p, Content: content})
			if rendered != nil {
				parsed[p] = rendered
			}
		}
	}
	kustomizations, err := ws.kustomizationChanges(deleted)
	if err != nil {
		return nil, nil, err
	}
	return append(changes, kustomizations...), parsed, nil
}
