package kustomization

import (
	"path"
	"sort"
	"strings"

	kustomize "sigs.k8s.io/kustomize/api/types"
)

// BuildRoots are the kustomizations no other kustomization reads as a
// directory resource, sorted: each is a build of its own.
func BuildRoots(kustomizations map[string]*File) []string {
	read := map[string]bool{}
	for p, k := range kustomizations {
		if k.Parsed == nil {
			continue
		}
		for _, entry := range resourcePaths(p, k.Parsed) {
			for _, name := range names {
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

// BuildNamespaces maps each file a kustomize build sets a namespace for to
// that namespace: the namespace: of the outermost kustomization on the way
// from a build root (a kustomization no other one reads) down through the
// directory resources to the kustomization listing the file, as the
// namespace transformers of nested builds apply, the outer last. A file two
// builds put into different namespaces is left out: it is no one object.
func BuildNamespaces(kustomizations map[string]*File) map[string]string {
	found := map[string]map[string]bool{}
	var descend func(k, namespace string, seen map[string]bool)
	descend = func(k, namespace string, seen map[string]bool) {
		parsed := kustomizations[k].Parsed
		if parsed == nil || seen[k] {
			return
		}
		seen[k] = true
		defer delete(seen, k)
		if namespace == "" {
			namespace = parsed.Namespace
		}
		for _, entry := range resourcePaths(k, parsed) {
			if inner, ok := inDir(kustomizations, entry); ok {
				descend(inner, namespace, seen)
				continue
			}
			if found[entry] == nil {
				found[entry] = map[string]bool{}
			}
			found[entry][namespace] = true
		}
	}
	for _, root := range BuildRoots(kustomizations) {
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

// ResourceEntry is file as a kustomization in another directory lists it,
// or false when the file is not below it.
func ResourceEntry(kustomization, file string) (string, bool) {
	dir := path.Dir(kustomization)
	if dir == "." {
		return file, true
	}
	return strings.CutPrefix(file, dir+"/")
}
