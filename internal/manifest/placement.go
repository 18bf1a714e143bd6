package manifest

import (
	"fmt"
	"path"
	"strings"

	"github.com/configbutler/gitops-reverser/internal/manifest/kustomization"
)

// ClusterScopeDir stands in for the namespace of cluster-scoped objects. It
// is not a legal namespace name, so it can never clash with a real one.
const ClusterScopeDir = "_cluster"

// The file names the index keeps but never manages.
const (
	readmeName      = "README.md"
	sensitiveSuffix = ".sops.yaml"
	plainSuffix     = ".yaml"
)

// CanonicalPath is where a new object is placed:
// {root}/{namespace}/{group}/{resource}/{name}.yaml, with the core group
// omitted, _cluster for a cluster-scoped object (empty Namespace), no prefix
// for root ".", and .sops.yaml for a sensitive object. A component longer
// than MaxSegmentBytes is shortened by FitSegment. It fails when a part is
// missing or would not be a single, ordinary path segment, or when the path
// would be longer than MaxPathBytes (only a root that long can make it).
func CanonicalPath(root string, id ObjectID, sensitive bool) (string, error) {
	namespace := id.Namespace
	if namespace == "" {
		namespace = ClusterScopeDir
	}
	parts := []struct{ what, value string }{
		{"namespace", namespace}, {"resource", id.Resource}, {"name", id.Name},
	}
	if id.Group != "" {
		parts = append(parts, struct{ what, value string }{"group", id.Group})
	}
	for _, part := range parts {
		if err := checkSegment(part.value); err != nil {
			return "", fmt.Errorf("place %s: %s %w", id, part.what, err)
		}
	}
	suffix := plainSuffix
	if sensitive {
		suffix = sensitiveSuffix
	}
	segments := []string{root, FitSegment(namespace, "")}
	if id.Group != "" {
		segments = append(segments, FitSegment(id.Group, ""))
	}
	segments = append(segments, FitSegment(id.Resource, ""), FitSegment(id.Name, suffix))
	placed := path.Join(segments...)
	if len(placed) > MaxPathBytes {
		return "", fmt.Errorf("place %s: the path is %d bytes, more than %d", id, len(placed), MaxPathBytes)
	}
	return placed, nil
}

// escapePrefix starts the file name of an object whose natural file name a
// checkout or kustomize would read as something else. No Kubernetes object
// name holds '_', so an escaped name is never another object's natural one.
const escapePrefix = "_"

// EscapedPath is the path a new object's file takes when its natural name
// is one kustomize reads as its build file (a ConfigMap named
// "kustomization" is kustomization.yaml canonically): the name gets a
// leading underscore (_kustomization.yaml). Any other path is returned as
// it is. The file is found again by the identity inside it, like any other.
func EscapedPath(p string) string {
	if !kustomization.IsPath(p) {
		return p
	}
	dir, base := path.Split(p)
	return dir + escapePrefix + base
}

// checkSegment refuses a value that is empty, would escape or alias a
// directory, or would be hidden (dot files are auxiliary, never managed).
func checkSegment(value string) error {
	switch {
	case value == "":
		return constError("is empty")
	case strings.ContainsAny(value, "/\\"):
		return fmt.Errorf("%q contains a path separator", value)
	case strings.HasPrefix(value, "."):
		return fmt.Errorf("%q starts with a dot", value)
	}
	return nil
}

// BootstrapReadme is the README.md staged on the first write into a root
// that has none.
func BootstrapReadme(root string) []byte {
	where := "This folder (`" + root + "`)"
	if root == "." {
		where = "This repository"
	}
	return []byte("# Written by GitOps Reverser\n\n" +
		where + " is written by GitOps Reverser, a Kubernetes operator that mirrors the\n" +
		"desired state of cluster objects into Git. The cluster is the source of truth: a change\n" +
		"made only here is overwritten the next time the object changes in the cluster.\n\n" +
		"New objects are placed at `{namespace}/{group}/{resource}/{name}.yaml` (no group for core\n" +
		"types, `_cluster` for cluster-scoped objects) unless the GitTarget's `spec.placement`\n" +
		"declares other paths, or the folder has one kustomize root: then they go beside it and are\n" +
		"listed in its `resources:`. Sensitive objects are SOPS-encrypted and\n" +
		"end in `.sops.yaml`. A name longer than a file system allows (255 bytes) is shortened to\n" +
		"a prefix and a hash of it. Existing files keep their place: moving or merging them is fine.\n")
}

// fileClass says how the index treats a file.
type fileClass int

const (
	classOther     fileClass = iota // not YAML: kept, never read
	classAuxiliary                  // tooling or build input: kept, never managed, never refused
	classManifest                   // may hold managed Kubernetes objects
)

// classify judges a path relative to the target root.
func classify(relPath string) fileClass {
	for _, segment := range strings.Split(relPath, "/") {
		if strings.HasPrefix(segment, ".") {
			return classAuxiliary // .sops.yaml, .github/, .gitlab-ci.yml, ...
		}
	}
	if path.Base(relPath) == readmeName || kustomization.IsPath(relPath) {
		return classAuxiliary
	}
	if strings.HasSuffix(relPath, ".yaml") || strings.HasSuffix(relPath, ".yml") {
		return classManifest
	}
	return classOther
}

// isSopsPath reports whether the file's name says it holds SOPS ciphertext.
func isSopsPath(p string) bool {
	return strings.HasSuffix(p, ".sops.yaml") || strings.HasSuffix(p, ".sops.yml")
}

// PlacementSource says which step of the placement ladder chose a new
// object's path (gitopsreverser_placements_total{source}).
type PlacementSource string

const (
	// PlacementDeclared: the GitTarget's spec.placement template.
	PlacementDeclared PlacementSource = "declared"
	// PlacementKustomization: beside the subtree's one kustomize root, which
	// gets a resources: entry for the file in the same commit.
	PlacementKustomization PlacementSource = "kustomization"
	// PlacementCanonical: the built-in {namespace}/{group}/{resource}/{name}.yaml.
	PlacementCanonical PlacementSource = "canonical"
)

// PlacementSources lists every source, for metrics to start at zero.
func PlacementSources() []PlacementSource {
	return []PlacementSource{PlacementDeclared, PlacementKustomization, PlacementCanonical}
}

// besideKustomization is a new object's path beside the kustomization:
// {kind}-{name}.yaml for a cluster-scoped object, {namespace}-{kind}-{name}.yaml
// otherwise, the kind in lower case.
func besideKustomization(kustomization string, id ObjectID, sensitive bool) (string, error) {
	parts := []string{strings.ToLower(id.Kind), id.Name}
	if id.Namespace != "" {
		parts = append([]string{id.Namespace}, parts...)
	}
	for _, part := range parts {
		if err := checkSegment(part); err != nil {
			return "", fmt.Errorf("place %s beside %s: %w", id, kustomization, err)
		}
	}
	suffix := plainSuffix
	if sensitive {
		suffix = sensitiveSuffix
	}
	placed := path.Join(path.Dir(kustomization), FitSegment(strings.Join(parts, "-"), suffix))
	if len(placed) > MaxPathBytes {
		return "", fmt.Errorf("place %s: the path is %d bytes, more than %d", id, len(placed), MaxPathBytes)
	}
	return placed, nil
}
