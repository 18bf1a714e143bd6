package manifest

import (
	"bytes"
	"errors"
	"path"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/internal/manifest/kustomization"
	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// Op is one object write in a batch: an Upsert or a Delete.
type Op interface {
	plannedWrite() write
}

// Upsert writes an object's desired state. YAML is exactly one document
// naming the object (sanitize.Marshal output, or its SOPS encryption when
// Sensitive).
type Upsert struct {
	ID        ObjectID
	YAML      []byte
	Sensitive bool
}

// Delete removes an object's document.
type Delete struct {
	ID ObjectID
}

func (u Upsert) plannedWrite() write { return write{id: u.ID, yaml: u.YAML, sensitive: u.Sensitive} }
func (d Delete) plannedWrite() write { return write{id: d.ID, remove: true} }

// write is the planner's single shape for both operations.
type write struct {
	id        ObjectID
	yaml      []byte
	sensitive bool
	remove    bool
}

// Change is one file change of a commit: new content for Path, or its
// deletion.
type Change struct {
	Path    string
	Content []byte
	Delete  bool
	// parsed is Content as the index holds it, built by the plan from the
	// documents it already parsed, so Apply parses nothing again.
	parsed *manifestFile
}

// Result is a planned commit: the file changes, the objects they write,
// and the objects refused fail-safe (their writes are left out; everything
// else is planned).
type Result struct {
	Changes  []Change       // sorted by path
	Objects  []ObjectChange // in planning order: deletes, then by identity
	Refusals []Refusal      // in planning order
	// parses counts the YAML documents the plan decoded (benchmarks read it).
	parses int
}

// Action is what a plan does to one object.
type Action string

const (
	ActionCreate Action = "create"
	ActionUpdate Action = "update"
	ActionDelete Action = "delete"
)

// ObjectChange is one object a plan actually writes (no-ops and refusals
// are not listed), for commit messages and metrics: a file change alone
// cannot say which documents of a multi-document file moved.
type ObjectChange struct {
	ID     ObjectID
	Path   string
	Action Action
	// Placement is the ladder step that chose a created object's path
	// (empty for updates and deletes).
	Placement PlacementSource
}

// Planner plans commits. The zero value is ready to use.
type Planner struct {
	// Bootstrap lists files, by path relative to the root, that a plan
	// writing anything adds when the root lacks them (the README, and a
	// .sops.yaml when encryption is configured). Nil means README.md with
	// BootstrapReadme.
	Bootstrap map[string][]byte
	// Placement is the target's declared policy for new objects; the zero
	// value places every new object at its canonical path. It never moves
	// an existing document.
	Placement Placement
}

// Plan plans one commit with the default Planner.
func Plan(ix *Index, ops []Op) (Result, error) {
	return Planner{}.Plan(ix, ops)
}

// Plan turns a batch of operations into the file changes of one commit.
// The last operation per object wins. It returns the acceptance gate's
// *UnsupportedContentError, and plans nothing, when the subtree is refused.
// The index is not modified: Apply the changes once they are committed.
func (p Planner) Plan(ix *Index, ops []Op) (Result, error) {
	if err := ix.Check(); err != nil {
		return Result{}, err // it names the root and every refused file; a wrap would repeat the root
	}
	ws := &workspace{ix: ix, placement: p.Placement, files: make(map[string]*fileEdit), resources: kustomization.Edits{}}
	var refusals []Refusal
	for _, w := range lastWriteWins(ops) {
		if refusal := ws.apply(w); refusal != nil {
			refusals = append(refusals, *refusal)
		}
	}
	changes, err := ws.changes()
	if err != nil {
		return Result{}, err
	}
	if len(changes) > 0 {
		changes = append(changes, p.bootstrapChanges(ix, ws.files)...)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return Result{Changes: changes, Objects: ws.objects, Refusals: refusals, parses: ws.parses}, nil
}

// lastWriteWins keeps the final operation per object and orders the result
// deletes first, then by identity. Deletes first means a file freed by a
// delete is free for the whole batch; a fixed order makes the plan a
// function of the batch's final state, not of event interleaving.
func lastWriteWins(ops []Op) []write {
	final := make(map[identityKey]write, len(ops))
	for _, op := range ops {
		if op == nil {
			continue
		}
		w := op.plannedWrite()
		final[w.id.key()] = w
	}
	writes := make([]write, 0, len(final))
	for _, w := range final {
		writes = append(writes, w)
	}
	sort.Slice(writes, func(i, j int) bool {
		if writes[i].remove != writes[j].remove {
			return writes[i].remove
		}
		return writes[i].id.key().less(writes[j].id.key())
	})
	return writes
}

// bootstrapChanges adds the bootstrap files the root lacks.
func (p Planner) bootstrapChanges(ix *Index, touched map[string]*fileEdit) []Change {
	files := p.Bootstrap
	if files == nil {
		files = map[string][]byte{readmeName: BootstrapReadme(ix.root)}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var changes []Change
	for _, name := range names {
		target := path.Join(ix.root, name)
		if _, written := touched[target]; written || ix.Has(target) {
			continue
		}
		changes = append(changes, Change{Path: target, Content: files[name]})
	}
	return changes
}

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
}

// kustomizationStep is the second step of the placement ladder for one plan.
type kustomizationStep struct {
	path   string
	usable bool // the one kustomization exists and its resources: can be edited
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
	if refusal := ws.place(w); refusal != nil {
		return ws.replace(loc, w)
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
	old := file.body(loc.section)
	body := withTrailingNewline(w.yaml)
	if bytes.Equal(old, body) {
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
		file.bodies[loc.section] = body
		file.docs[loc.section] = doc
		ws.record(w, loc.path, ActionUpdate)
		return nil
	}
	desiredText := body
	bare := ws.namespaceless(loc, w)
	if bare {
		// The kustomization sets the namespace: the document keeps
		// leaving it out, and the diff is only the changed values.
		top, desiredText = withoutNamespace(top), nil
	}
	ws.parses++
	oldTop, _ := yamledit.Decode(old) // the index parsed it once: it is valid
	if oldTop != nil {
		if adjusted, through := ws.editThrough(loc.path, oldTop, top); through {
			// The desired bytes no longer say what the file must read.
			top, desiredText = adjusted, nil
		}
	}
	if yamledit.Equivalent(oldTop, top) {
		return nil
	}
	if refusal := file.mixingRefusal(w, loc.section); refusal != nil {
		return refusal
	}
	if isSopsPath(loc.path) {
		// The type is no longer sensitive: its file still says SOPS, and
		// tools (and people) would take the plaintext in it for ciphertext.
		return &Refusal{ID: w.id, Path: loc.path, Reason: RefusalInvalidPlacement,
			Detail: "a plaintext object is not written into a .sops file; move or delete the file"}
	}
	edited := ws.editedBody(old, oldTop, body, desiredText, top)
	file.bodies[loc.section] = edited
	file.docs[loc.section] = writtenDocument(doc, bare && !bytes.Equal(edited, body))
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
// as the new document; anything else is never written.
func (ws *workspace) editedBody(old []byte, oldTop *yaml.Node, body, desiredText []byte, top *yaml.Node) []byte {
	if oldTop == nil {
		return body
	}
	edited, err := yamledit.Splice(old, oldTop, desiredText, top)
	if err != nil {
		return body
	}
	if bytes.Equal(edited, body) {
		return body
	}
	ws.parses++
	editedTop, err := yamledit.Decode(edited)
	if err != nil || editedTop == nil || !yamledit.Same(editedTop, top) {
		return body
	}
	return edited
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
	if source == PlacementKustomization && ws.rootSetsNamespace(w) {
		// Written the way the documents beside it are: the root's
		// kustomization sets the namespace.
		edited := ws.editedBody(body, top, body, nil, withoutNamespace(top))
		body, doc = edited, writtenDocument(doc, !bytes.Equal(edited, body))
	}
	_, createdHere := ws.files[target]
	if w.sensitive && (ws.ix.Has(target) || createdHere) {
		return &Refusal{ID: w.id, Path: target, Reason: RefusalSensitiveShared,
			Detail: "a sensitive object is never appended to an existing file"}
	}
	file := ws.edit(target)
	if refusal := file.mixingRefusal(w, noSection); refusal != nil {
		return refusal
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

// kustomizationRoot looks up, once per plan, the kustomization new files go
// beside: usable only when it is the subtree's only one and its resources:
// list can be edited in place.
func (ws *workspace) kustomizationRoot() *kustomizationStep {
	if ws.root == nil {
		ws.root = &kustomizationStep{}
		if p, ok := ws.ix.kustomizationRoot(); ok {
			ws.parses++
			probe := kustomization.NewEdit()
			probe.Add = []string{"probe.yaml"}
			_, err := kustomization.EditFile(ws.ix.others[p], probe)
			ws.root = &kustomizationStep{path: p, usable: err == nil}
		}
	}
	return ws.root
}

// rootBuilds reports whether a file beside the kustomization root would
// build into the object w writes: not when the root sets a namespace other
// than the object's, which a build would move it into.
func (ws *workspace) rootBuilds(w write) bool {
	namespace := ws.rootNamespace()
	return w.id.Namespace == "" || namespace == "" || namespace == w.id.Namespace
}

// rootSetsNamespace reports whether the new object w writes, beside the
// kustomization root, is still that object with its namespace left out.
func (ws *workspace) rootSetsNamespace(w write) bool {
	if w.sensitive || w.id.Namespace == "" {
		return false
	}
	bare := w.id
	bare.Namespace = ""
	return slices.ContainsFunc(answersTo(bare, ws.rootNamespace()), w.id.SameObject)
}

// rootNamespace is the namespace: of the kustomization root ("" for none):
// no other kustomization reads it, so its own is what the build sets.
func (ws *workspace) rootNamespace() string {
	if k := ws.kustomization(ws.kustomizationRoot().path); k != nil {
		return k.Namespace
	}
	return ""
}

// edit returns the working copy of the file at p, creating it on first use.
func (ws *workspace) edit(p string) *fileEdit {
	if file, ok := ws.files[p]; ok {
		return file
	}
	file := &fileEdit{path: p, bodies: make(map[int][]byte), removed: make(map[int]bool)}
	if original, ok := ws.ix.manifests[p]; ok {
		file.original = original
		file.docs = append([]*document(nil), original.docs...)
	}
	ws.files[p] = file
	return file
}

// changes renders every touched file and keeps those that differ, with the
// kustomizations' resources: lists edited to match.
func (ws *workspace) changes() ([]Change, error) {
	var changes []Change
	var deleted []string
	for p, file := range ws.files {
		content, parsed := file.renderParsed()
		switch {
		case content == nil && file.original != nil:
			changes = append(changes, Change{Path: p, Delete: true})
			deleted = append(deleted, p)
		case content == nil:
		case file.original != nil && bytes.Equal(content, file.original.content):
		default:
			changes = append(changes, Change{Path: p, Content: content, parsed: parsed})
		}
	}
	kustomizations, err := ws.kustomizationChanges(deleted)
	if err != nil {
		return nil, err
	}
	return append(changes, kustomizations...), nil
}

// FileContent is the content of a file that holds only the document yaml,
// as the planner writes a new object's file: callers that know an object's
// YAML can tell an unchanged file by its blob id without reading it.
func FileContent(yaml []byte) []byte { return withTrailingNewline(yaml) }

func withTrailingNewline(b []byte) []byte {
	if len(b) == 0 || b[len(b)-1] == '\n' {
		return b
	}
	return append(b[:len(b):len(b)], '\n')
}
