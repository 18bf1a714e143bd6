package manifest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/configbutler/gitops-reverser/internal/manifest/kustomization"
	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// Index knows every file of one GitTarget subtree and every Kubernetes
// object document in it. It keeps references to the content it is given:
// callers must not modify those byte slices afterwards. It is not safe for
// concurrent use; one branch worker owns it.
type Index struct {
	root string
	// manifests are the .yaml/.yml files that may hold managed objects.
	manifests map[string]*manifestFile
	// others are the remaining files: auxiliary ones keep their content
	// (the kustomization checks read it), the rest are only known to exist.
	others map[string][]byte
	// kustomizations are the paths in others kustomize reads as its build
	// file, so that the planner need not scan every file for them.
	kustomizations map[string]*kustomization.File
	// namespaces caches kustomization.BuildNamespaces of kustomizations; nil when they
	// changed since.
	namespaces map[string]string
	// byID finds documents by identity; more than one location is a
	// duplicate that Check refuses.
	byID identityIndex
	// problems holds what Check reports, by path.
	problems map[string][]Problem
	// parses counts the YAML documents the index decoded, for benchmarks.
	parses int
	// trees bounds the documents that keep their parse (document.tree).
	trees treeRing
	// pending are files known by path and blob id only (pending.go).
	pending pendingFiles
	// learnt are files a plan found to be the operator's rendering, left
	// as they were: the next Apply lets their bytes go (released.go).
	learnt []string
}

// manifestFile is a parsed YAML file: its bytes, its sections, and the
// document each section holds (nil for none). A released file (released.go)
// keeps its one document and the SHA-256 of its bytes, not the bytes.
type manifestFile struct {
	content  []byte
	sections []yamledit.Section
	docs     []*document
	sum      [sha256.Size]byte
	released bool
}

// location points at one document: a file and a section in it.
type location struct {
	path    string
	section int
}

// NewIndex indexes files, keyed by repository-relative path, under root
// (the GitTarget's spec.path; "." or "" for the repository root). Content
// the operator cannot manage does not fail NewIndex; Check reports it. The
// error is for paths that are not clean or not under root.
func NewIndex(root string, files map[string][]byte) (*Index, error) {
	return NewIndexRendered(root, files, nil)
}

// NewIndexRendered is NewIndex for a load that knows some files, by path,
// to be exactly the operator's rendering of one object each (the worker
// matched their blob ids with the renderings it is about to write: after a
// restart, nearly every file). Those are indexed as that object's canonical
// document without parsing them: a restart with nothing changed parses no
// file. Any other file, or one whose text is not a single plain document,
// is parsed as NewIndex parses it.
func NewIndexRendered(root string, files map[string][]byte, rendered map[string]ObjectID) (*Index, error) {
	cleanRoot, err := cleanRootPath(root)
	if err != nil {
		return nil, err
	}
	ix := &Index{
		root:           cleanRoot,
		manifests:      make(map[string]*manifestFile),
		others:         make(map[string][]byte),
		byID:           newIdentityIndex(),
		kustomizations: make(map[string]*kustomization.File),
		problems:       make(map[string][]Problem),
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		var parsed *manifestFile
		if id, ok := rendered[p]; ok {
			parsed = renderedFile(files[p], id)
		}
		if err := ix.add(p, files[p], parsed); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// renderedFile is what parsing content would give, for content that is the
// operator's rendering of the object id: one canonical document, never
// encrypted (a Secret's rendering is not written as is). nil, so that the
// file is parsed, when the text is not one document or has a top-level
// sops key, which a parse would mark encrypted.
func renderedFile(content []byte, id ObjectID) *manifestFile {
	sections := yamledit.Sections(content)
	if len(sections) != 1 || topLevelSops(content) {
		return nil
	}
	id.Resource = "" // unknown from a file, as objectOf leaves it
	return &manifestFile{content: content, sections: sections, docs: []*document{{id: id, canonical: true}}}
}

// topLevelSops reports whether a rendering has a top-level sops key, which
// a parse marks encrypted (objectOf): such a text is parsed, not taken as
// a plain rendering.
func topLevelSops(content []byte) bool {
	return bytes.HasPrefix(content, []byte("sops:")) || bytes.Contains(content, []byte("\nsops:"))
}

func cleanRootPath(root string) (string, error) {
	if root == "" {
		return ".", nil
	}
	clean := path.Clean(root)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("index root %q: must be a relative path inside the repository", root)
	}
	return clean, nil
}

// Parses is the number of YAML documents the index decoded since it was
// made (NewIndex, Add and Apply).
func (ix *Index) Parses() int { return ix.parses }

// Root is the cleaned subtree root ("." for the repository root).
func (ix *Index) Root() string { return ix.root }

// Has reports whether a file exists at p, pending ones included.
func (ix *Index) Has(p string) bool {
	if _, ok := ix.manifests[p]; ok || ix.isPending(p) {
		return true
	}
	_, ok := ix.others[p]
	return ok
}

// Lookup returns the path of the file holding the object, if any.
func (ix *Index) Lookup(id ObjectID) (string, bool) {
	locations := ix.locate(id)
	if len(locations) == 0 {
		return "", false
	}
	return locations[0].path, true
}

// Document returns the text of the object's document as it stands (its
// section, without a leading '---' marker or comments), for a caller that
// needs the current content: a SOPS document's data key is reused when the
// object is encrypted again. It is false for a file whose bytes the index
// let go (released.go).
func (ix *Index) Document(id ObjectID) ([]byte, bool) {
	loc, ok := ix.find(id)
	if !ok {
		return nil, false
	}
	file := ix.manifests[loc.path]
	if file.released {
		// Only the operator's plaintext rendering is let go: no data key
		// to reuse in it.
		return nil, false
	}
	s := file.sections[loc.section]
	return file.content[s.Body:s.End], true
}

// Add indexes the file at p with content, replacing what was known about p.
func (ix *Index) Add(p string, content []byte) error {
	return ix.add(p, content, nil)
}

// add indexes a file; parsed, when it describes content, saves parsing it.
func (ix *Index) add(p string, content []byte, parsed *manifestFile) error {
	rel, err := ix.relative(p)
	if err != nil {
		return err
	}
	ix.remove(p, parsed)
	switch classify(rel) {
	case classManifest:
		if parsed != nil && sameBytes(parsed.content, content) {
			ix.register(p, parsed)
			return nil
		}
		ix.addManifest(p, content)
	case classAuxiliary:
		ix.others[p] = content
		if kustomization.IsPath(p) {
			ix.parses++
			ix.kustomizations[p] = kustomization.Read(content)
			ix.namespaces = nil
		}
	default:
		ix.others[p] = nil
	}
	return nil
}

// addManifest parses every section of a YAML file and registers its
// documents. A section that cannot be parsed is recorded as a problem; the
// file's other documents are still registered so duplicates are reported
// together.
func (ix *Index) addManifest(p string, content []byte) {
	sections := yamledit.Sections(content)
	file := &manifestFile{content: content, sections: sections, docs: make([]*document, len(sections))}
	for i, s := range sections {
		ix.parses++
		doc, err := parseSection(content[s.Start:s.End])
		if err != nil {
			reason := ReasonInvalidYAML
			if errors.Is(err, errNotAnObject) {
				reason = ReasonNotKubernetesObject
			}
			ix.problems[p] = append(ix.problems[p], Problem{
				Path: p, Reason: reason, Detail: fmt.Sprintf("document %d: %v", i+1, err),
			})
			continue
		}
		file.docs[i] = doc
	}
	ix.register(p, file)
}

// register makes a parsed file's documents findable by identity.
func (ix *Index) register(p string, file *manifestFile) {
	ix.manifests[p] = file // first: byID reads the documents it holds
	for i, doc := range file.docs {
		if doc != nil && doc.tree != nil {
			ix.trees.keep(doc, doc.tree) // a plan's edit parsed it
		}
		if doc != nil {
			ix.byID.add(ix.manifests, doc.id.key(), location{path: p, section: i})
		}
	}
	if releasable(file) {
		file.release()
	}
}

// sameBytes reports whether a and b are the same slice of memory, not just
// equal: a Change's Content replaced after planning is parsed again.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Remove forgets the file at p; an unknown path is ignored.
func (ix *Index) Remove(p string) { ix.remove(p, nil) }

// remove forgets the file at p; the documents next (the file that replaces
// it, nil for none) still holds keep their parse.
func (ix *Index) remove(p string, next *manifestFile) {
	ix.forgetPending(p)
	delete(ix.others, p)
	if _, ok := ix.kustomizations[p]; ok {
		delete(ix.kustomizations, p)
		ix.namespaces = nil
	}
	delete(ix.problems, p)
	file, ok := ix.manifests[p]
	if !ok {
		return
	}
	for _, doc := range file.docs {
		if doc == nil {
			continue
		}
		if next == nil || !slices.Contains(next.docs, doc) {
			doc.tree = nil // gone from the index: its slot in the ring keeps nothing
		}
		ix.byID.remove(ix.manifests, doc.id.key(), p)
	}
	delete(ix.manifests, p)
}

// Apply folds a plan's changes into the index, as if the files had been
// written and read again.
func (ix *Index) Apply(plan Result) error {
	for _, change := range plan.Changes {
		if change.Delete {
			ix.Remove(change.Path)
			continue
		}
		if err := ix.add(change.Path, change.Content, plan.parsed[change.Path]); err != nil {
			return fmt.Errorf("apply change to %s: %w", change.Path, err)
		}
	}
	ix.releaseLearnt()
	return nil
}

// relative returns p relative to the root, refusing a path that is not
// clean or lies outside the subtree.
func (ix *Index) relative(p string) (string, error) {
	if p == "" || path.Clean(p) != p || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("index file %q: not a clean relative path", p)
	}
	if ix.root == "." {
		return p, nil
	}
	rel, ok := strings.CutPrefix(p, ix.root+"/")
	if !ok {
		return "", fmt.Errorf("index file %q: outside the target root %q", p, ix.root)
	}
	return rel, nil
}

// find is the location of the one document that is the object id (Check
// refuses duplicates before anything is planned).
func (ix *Index) find(id ObjectID) (location, bool) {
	locations := ix.locate(id)
	if len(locations) != 1 {
		return location{}, false
	}
	return locations[0], true
}

// locate lists the documents that are the object id: those written with its
// identity, else, for an object in a namespace, the documents naming no
// namespace that a kustomization builds into that one (answersTo).
func (ix *Index) locate(id ObjectID) []location {
	written := ix.byID.locations(ix.manifests, id.key())
	if len(written) > 0 || id.Namespace == "" {
		return written
	}
	bare := id
	bare.Namespace = ""
	var built []location
	for _, loc := range ix.byID.locations(ix.manifests, bare.key()) {
		if slices.ContainsFunc(ix.objectsAt(loc), id.SameObject) {
			built = append(built, loc)
		}
	}
	return built
}

// buildNamespace is the namespace a build gives a document at p that names
// none, "" when no kustomization sets one. It is computed for the whole
// subtree once per set of kustomizations.
func (ix *Index) buildNamespace(p string) string {
	if ix.namespaces == nil {
		ix.namespaces = kustomization.BuildNamespaces(ix.kustomizations)
	}
	return ix.namespaces[p]
}

// objectsAt lists the objects the document at loc is (answersTo).
func (ix *Index) objectsAt(loc location) []ObjectID {
	written := ix.manifests[loc.path].docs[loc.section].id
	if written.Namespace != "" {
		return []ObjectID{written}
	}
	return answersTo(written, ix.buildNamespace(loc.path))
}

// kustomizationRoot is the subtree's one kustomize root: the only
// kustomization no other kustomization in the subtree reads as a directory
// resource (a top-level kustomization listing apps/ and infra/, each with
// their own, is the one root). None, or more than one, is not a root to
// place by: the ladder declines to the canonical path. The canonical tree is
// one a resources: graph cannot reach, so the root must take the file.
func (ix *Index) kustomizationRoot() (root string, ok bool) {
	roots := kustomization.BuildRoots(ix.kustomizations)
	if len(roots) != 1 {
		return "", false
	}
	return roots[0], true
}
