package manifest

import (
	"path"
	"sort"

	yaml "go.yaml.in/yaml/v3"
	kustomize "sigs.k8s.io/kustomize/api/types"

	"github.com/configbutler/gitops-reverser/internal/manifest/yamledit"
)

// A kustomization's namespace: is set on every namespaced object its build
// renders, so teams leave metadata.namespace out of the documents it lists.
// Such a document is the live object in that namespace. The planner does
// not know which kinds are cluster-scoped (kustomize does, and leaves them
// alone), so the document also stays the object it is written as: a live
// cluster-scoped object has no namespace and matches it exactly.

// answersTo lists the objects a document written as written is, in a file
// that kustomize builds into buildNamespace ("" when no kustomization sets
// one): the identity it is written with and, when it names no namespace,
// the same object in buildNamespace. This is the one place that decides
// which document is which object: lookups, edits, deletes, placement and
// the sweep all ask it.
func answersTo(written ObjectID, buildNamespace string) []ObjectID {
	if written.Namespace != "" || buildNamespace == "" {
		return []ObjectID{written}
	}
	built := written
	built.Namespace = buildNamespace
	return []ObjectID{written, built}
}

// buildNamespaces maps each file a kustomize build sets a namespace for to
// that namespace: the namespace: of the outermost kustomization on the way
// from a build root (a kustomization no other one reads) down through the
// directory resources to the kustomization listing the file, as the
// namespace transformers of nested builds apply, the outer last. A file two
// builds put into different namespaces is left out: it is no one object.
func buildNamespaces(kustomizations map[string]*kustomizationFile) map[string]string {
	found := map[string]map[string]bool{}
	var descend func(k, namespace string, seen map[string]bool)
	descend = func(k, namespace string, seen map[string]bool) {
		parsed := kustomizations[k].parsed
		if parsed == nil || seen[k] {
			return
		}
		seen[k] = true
		defer delete(seen, k)
		if namespace == "" {
			namespace = parsed.Namespace
		}
		for _, entry := range resourcePaths(k, parsed) {
			if inner, ok := kustomizationIn(kustomizations, entry); ok {
				descend(inner, namespace, seen)
				continue
			}
			if found[entry] == nil {
				found[entry] = map[string]bool{}
			}
			found[entry][namespace] = true
		}
	}
	for _, root := range buildRoots(kustomizations) {
		descend(root, "", map[string]bool{})
	}
	namespaces := make(map[string]string, len(found))
	for file, set := range found {
		if len(set) == 1 {
			for namespace := range set {
				if namespace != "" {
					namespaces[file] = namespace
				}
			}
		}
	}
	return namespaces
}

// resourcePaths are the resources: and bases: entries of the kustomization
// at p, as paths from the repository root.
func resourcePaths(p string, parsed *kustomize.Kustomization) []string {
	var paths []string
	for _, entry := range append(append([]string(nil), parsed.Resources...), parsed.Bases...) {
		paths = append(paths, path.Join(path.Dir(p), entry))
	}
	return paths
}

// kustomizationNames are the file names kustomize reads as a directory's
// kustomization, in the order it tries them.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// kustomizationIn is the kustomization of directory dir, if it has one.
func kustomizationIn(kustomizations map[string]*kustomizationFile, dir string) (string, bool) {
	for _, name := range kustomizationNames {
		if _, ok := kustomizations[path.Join(dir, name)]; ok {
			return path.Join(dir, name), true
		}
	}
	return "", false
}

// buildRoots are the kustomizations no other kustomization reads as a
// directory resource, sorted: each is a build of its own.
func buildRoots(kustomizations map[string]*kustomizationFile) []string {
	read := map[string]bool{}
	for p, k := range kustomizations {
		if k.parsed == nil {
			continue
		}
		for _, entry := range resourcePaths(p, k.parsed) {
			for _, name := range kustomizationNames {
				read[path.Join(entry, name)] = true
			}
		}
	}
	var roots []string
	for p := range kustomizations {
		if !read[p] {
			roots = append(roots, p)
		}
	}
	sort.Strings(roots)
	return roots
}

// buildNamespace is the namespace a build gives a document at p that names
// none, "" when no kustomization sets one. It is computed for the whole
// subtree once per set of kustomizations.
func (ix *Index) buildNamespace(p string) string {
	if ix.namespaces == nil {
		ix.namespaces = buildNamespaces(ix.kustomizations)
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

// withoutNamespace is a copy of a document's tree without
// metadata.namespace.
func withoutNamespace(top *yaml.Node) *yaml.Node {
	bare := yamledit.CopyNode(top)
	if meta := yamledit.MappingValue(bare, "metadata"); meta != nil && meta.Kind == yaml.MappingNode {
		yamledit.SetOrDelete(meta, "namespace", nil)
	}
	return bare
}
