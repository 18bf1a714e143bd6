package manifest

import (
	"path"
	"slices"
	"sort"

	yaml "go.yaml.in/yaml/v3"

	"github.com/configbutler/gitops-reverser/gitfile"
	"github.com/configbutler/gitops-reverser/internal/manifest/kustomization"
)

// Op is one object write in a batch: an Upsert or a Delete.
type Op interface {
	plannedWrite() write
}

// Upsert writes an object's desired state. YAML is exactly one document
// naming the object (sanitize.Marshal output, or its SOPS encryption when
// Sensitive).
type Upsert struct {
	ID   ObjectID
	YAML []byte
	// Rendered says YAML is the operator's own rendering of the object
	// (sanitize.Marshal), not a text from elsewhere: the planner then knows
	// a document it writes verbatim as canonical, and a later write
	// replaces that text whole without parsing it.
	Rendered bool
	// Node, when set, is the tree of YAML: the one the renderer encoded
	// (sanitize.MarshalNode), or YAML parsed. The planner reads the object
	// from it instead of parsing YAML. Nil means parse YAML once (a write
	// replayed from a journal, a test). It is read, never modified.
	Node      *yaml.Node
	Sensitive bool
}

// Delete removes an object's document.
type Delete struct {
	ID ObjectID
}

func (u Upsert) plannedWrite() write {
	return write{id: u.ID, yaml: u.YAML, rendered: u.Rendered && !u.Sensitive, node: u.Node, sensitive: u.Sensitive}
}
func (d Delete) plannedWrite() write { return write{id: d.ID, remove: true} }

// write is the planner's single shape for both operations.
type write struct {
	id        ObjectID
	yaml      []byte
	rendered  bool
	node      *yaml.Node
	sensitive bool
	remove    bool
}

// Result is a planned commit: the file changes, the objects they write,
// and the objects refused fail-safe (their writes are left out; everything
// else is planned).
type Result struct {
	// Changes are the commit's file changes, sorted by path. The planner
	// leaves their BaseBlob empty: the index knows contents, the caller
	// knows blob ids.
	Changes []gitfile.Change

	Objects  []ObjectChange // in planning order: deletes, then by identity
	Refusals []Refusal      // in planning order
	// parses counts the YAML documents the plan decoded (benchmarks read it).
	parses int
	// parsed holds, by path, a changed file's content as the index holds
	// it, built by the plan from the documents it already parsed, so Apply
	// parses nothing again. It stays beside the changes, not on them: a
	// change is what the forge sees.
	parsed map[string]*manifestFile
}

// Parses is the number of YAML documents the plan decoded: what a benchmark
// reports as parses on the write path.
func (r Result) Parses() int { return r.parses }

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
// The index's files are not modified: Apply the changes once they are
// committed. A plan only lets the index learn about texts it already holds
// (that a document is the operator's rendering, or its parse), which holds
// whether the plan is committed or not.
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
	if len(ws.needed) > 0 {
		slices.Sort(ws.needed)
		return Result{}, &ContentNeededError{Paths: ws.needed}
	}
	changes, parsed, err := ws.changes()
	if err != nil {
		return Result{}, err
	}
	if err := ix.checkUnread(changes); err != nil {
		return Result{}, err
	}
	if len(changes) > 0 {
		changes = append(changes, p.bootstrapChanges(ix, ws.files)...)
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return Result{Changes: changes, Objects: ws.objects, Refusals: refusals, parses: ws.parses, parsed: parsed}, nil
}

// lastWriteWins keeps the final operation per object and orders the result
// deletes first, then by identity. Deletes first means a file freed by a
// delete is free for the whole batch; a fixed order makes the plan a
// function of the batch's final state, not of event interleaving.
//
// It sorts rather than keeping a map by identity: a replay's window plans
// tens of thousands of writes at once, and the map was about 250 bytes
// per write more of the commit's peak memory.
func lastWriteWins(ops []Op) []write {
	writes := make([]write, 0, len(ops))
	for _, op := range ops {
		if op != nil {
			writes = append(writes, op.plannedWrite())
		}
	}
	// Stable: of one object's writes, the last stays last.
	sort.SliceStable(writes, func(i, j int) bool { return writes[i].id.key().less(writes[j].id.key()) })
	final := writes[:0]
	for i, w := range writes {
		if i+1 < len(writes) && writes[i+1].id.key() == w.id.key() {
			continue // a later write of the same object wins
		}
		final = append(final, w)
	}
	clear(writes[len(final):]) // nothing the plan dropped stays referenced
	writes = final
	sort.SliceStable(writes, func(i, j int) bool { return writes[i].remove && !writes[j].remove })
	return writes
}

// bootstrapChanges adds the bootstrap files the root lacks.
func (p Planner) bootstrapChanges(ix *Index, touched map[string]*fileEdit) []gitfile.Change {
	files := p.Bootstrap
	if files == nil {
		files = map[string][]byte{readmeName: BootstrapReadme(ix.root)}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var changes []gitfile.Change
	for _, name := range names {
		target := path.Join(ix.root, name)
		if _, written := touched[target]; written || ix.Has(target) {
			continue
		}
		changes = append(changes, gitfile.Change{Path: target, Content: files[name]})
	}
	return changes
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
