package manifest

import "sort"

// SweepScope is the type and scope one watch covers. Group and Kind select
// the type (documents carry a kind, not a resource name). Namespace is the
// watch's one concrete namespace for a namespaced type, and "" for a
// cluster-scoped type, which selects the documents without a namespace.
// There is no "every namespace" scope: a wildcard rule is expanded into one
// watch, and one sweep, per namespace.
type SweepScope struct {
	Group, Kind, Namespace string
}

// Covers reports whether the object is of the scope's type and namespace.
func (s SweepScope) Covers(id ObjectID) bool {
	return id.Group == s.Group && id.Kind == s.Kind && id.Namespace == s.Namespace
}

// Sweep returns a Delete for every document of scope's type and namespace
// whose object is not in desired: the deletes that happened while no watch
// was running. A document naming no namespace is of the namespace a
// kustomization builds it into (answersTo). Other types and other
// namespaces are never touched. The deletes are ordered by identity; plan
// them like any other batch.
func Sweep(ix *Index, scope SweepScope, desired []ObjectID) []Delete {
	present := make(map[identityKey]bool, len(desired))
	for _, id := range desired {
		present[id.key()] = true
	}
	var deletes []Delete
	for key, locations := range ix.byID {
		if key.group != scope.Group || key.kind != scope.Kind {
			continue
		}
		for _, id := range ix.objectsAt(locations[0]) {
			if scope.Covers(id) && !present[id.key()] {
				deletes = append(deletes, Delete{ID: id})
			}
		}
	}
	sort.Slice(deletes, func(i, j int) bool { return deletes[i].ID.key().less(deletes[j].ID.key()) })
	return deletes
}
