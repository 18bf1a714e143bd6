package manifest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ProblemReason classifies content the operator refuses to manage.
type ProblemReason string

const (
	// ReasonInvalidYAML: a .yaml/.yml file does not parse, or cannot be
	// split into documents safely.
	ReasonInvalidYAML ProblemReason = "InvalidYAML"
	// ReasonNotKubernetesObject: a document parses but has no apiVersion,
	// kind or metadata.name string.
	ReasonNotKubernetesObject ProblemReason = "NotKubernetesObject"
	// ReasonDuplicateIdentity: two documents name the same object (group,
	// kind, namespace, name), so an edit would have to pick one.
	ReasonDuplicateIdentity ProblemReason = "DuplicateIdentity"
	// ReasonUnsupportedKustomization: a kustomization file in the subtree
	// uses a feature that makes the objects a build renders differ from the
	// documents in Git (generators, inline or JSON 6902 patches, components,
	// Helm charts, replacements, transformers, a name prefix or suffix,
	// remote bases), has malformed images: or replicas: entries, or cannot
	// be read as a kustomization at all. Editing a document would then not
	// change what is deployed the way the cluster's object changed.
	ReasonUnsupportedKustomization ProblemReason = "UnsupportedKustomization"
)

// Problem is one reason the subtree is refused.
type Problem struct {
	Path   string
	Reason ProblemReason
	Detail string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s: %s", p.Path, p.Reason, p.Detail)
}

// UnsupportedContentError refuses a subtree: nothing may be written into it
// until a human fixes every listed problem.
type UnsupportedContentError struct {
	Root     string
	Problems []Problem // sorted by path, then reason, then detail
}

func (e *UnsupportedContentError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("unsupported content under %q in %d file(s): %s",
		e.Root, len(e.Paths()), strings.Join(lines, "; "))
}

// Paths lists each offending path once, sorted.
func (e *UnsupportedContentError) Paths() []string {
	var paths []string
	for _, p := range e.Problems {
		if len(paths) == 0 || paths[len(paths)-1] != p.Path {
			paths = append(paths, p.Path)
		}
	}
	return paths
}

// contentCheck finds one kind of problem over the whole index.
type contentCheck func(ix *Index) []Problem

// Check is the acceptance gate: it returns an *UnsupportedContentError
// listing every problem, or nil when the subtree can be managed. It is
// structure-only: nothing here depends on what the cluster serves.
func (ix *Index) Check() error {
	checks := []contentCheck{
		parseProblems,
		duplicateIdentities,
		kustomizationProblems,
	}
	var problems []Problem
	for _, check := range checks {
		problems = append(problems, check(ix)...)
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Slice(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return a.Detail < b.Detail
	})
	return &UnsupportedContentError{Root: ix.root, Problems: problems}
}

// parseProblems are the invalid-YAML and not-an-object findings recorded
// while indexing.
func parseProblems(ix *Index) []Problem {
	var problems []Problem
	for _, found := range ix.problems {
		problems = append(problems, found...)
	}
	return problems
}

// duplicateIdentities reports every file holding a document whose identity
// appears more than once.
func duplicateIdentities(ix *Index) []Problem {
	var problems []Problem
	ix.byID.duplicates(func(key identityKey, locations []location) {
		id := ObjectID{Group: key.group, Kind: key.kind, Namespace: key.namespace, Name: key.name}
		paths := make([]string, 0, len(locations))
		for _, loc := range locations {
			paths = append(paths, loc.path)
		}
		sort.Strings(paths)
		paths = slices.Compact(paths)
		detail := fmt.Sprintf("%s is defined %d times (%s)", id, len(locations), strings.Join(paths, ", "))
		for _, p := range paths {
			problems = append(problems, Problem{Path: p, Reason: ReasonDuplicateIdentity, Detail: detail})
		}
	})
	return problems
}

// kustomizationProblems reads every kustomization in the subtree with the
// kustomize API types and reports each feature the operator cannot manage.
// A strategic-merge patch read from a file (patches: - path: x.yaml, or
// patchesStrategicMerge: - x.yaml) is tolerated as read-only context, and
// so is a base outside the subtree (../../base): both are only read.
func kustomizationProblems(ix *Index) []Problem {
	var problems []Problem
	for p, k := range ix.kustomizations {
		for _, feature := range k.Features {
			problems = append(problems, Problem{Path: p, Reason: ReasonUnsupportedKustomization, Detail: feature})
		}
	}
	return problems
}
