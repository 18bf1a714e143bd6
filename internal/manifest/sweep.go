package manifest

import (
	"iter"
	"sort"
)

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
	return SweepAll(ix, []ScopeSweep{{Scope: scope, Present: desired}})
}

// ScopeSweep is one watch's sweep: its scope and the objects its replay
// found, by name (Names) or by whole identity (Present), or both; Found
// reads them as one set.
type ScopeSweep struct {
	Scope SweepScope
	// Names are the names of objects found in Scope. A scope fixes the
	// group, kind and namespace, so a name is all that differs: a stream
	// hands its replay's set this way, 16 bytes an object where an
	// ObjectID takes 96 (50k objects: 0.8 MB instead of 4.8 MB, held
	// from the replay until its sweep is committed, and copied each time
	// a window the replay fills carries the sweep on).
	Names []string `json:",omitempty"`
	// Present are objects found, by whole identity; one Scope does not
	// cover is not of this sweep and is ignored. A journal entry of
	// version 1 holds only these.
	Present []ObjectID `json:",omitempty"`
}

// Found is the name of every object found in Scope: Names, and the names
// of the Present objects Scope covers. A name may come more than once.
func (s ScopeSweep) Found() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, name := range s.Names {
			if !yield(name) {
				return
			}
		}
		for _, id := range s.Present {
			if s.Scope.Covers(id) && !yield(id.Name) {
				return
			}
		}
	}
}

// SweepAll is Sweep for many scopes in one pass over the index: a replay
// of a type watched in many namespaces sweeps once per namespace, and a
// pass per sweep made a restart cost namespaces × documents. A scope swept
// more than once deletes what any of its sweeps did not find, as sweeping
// each in turn would.
func SweepAll(ix *Index, sweeps []ScopeSweep) []Delete {
	type seen struct{ sweeps, last int }
	// A scope's objects are told apart by name alone (ScopeSweep.Found),
	// and a count is kept by value: no allocation per object found.
	present := map[SweepScope]map[string]seen{}
	times := map[SweepScope]int{}
	kinds := map[[2]string]bool{}
	for i, sw := range sweeps {
		set := present[sw.Scope]
		if set == nil {
			set = make(map[string]seen, len(sw.Names)+len(sw.Present))
			present[sw.Scope] = set
		}
		times[sw.Scope]++
		kinds[[2]string{sw.Scope.Group, sw.Scope.Kind}] = true
		for name := range sw.Found() {
			switch s, ok := set[name]; {
			case !ok:
				set[name] = seen{sweeps: 1, last: i}
			case s.last != i: // a replay names an object once; count it once per sweep
				set[name] = seen{sweeps: s.sweeps + 1, last: i}
			}
		}
	}
	var deletes []Delete
	ix.byID.all(ix.manifests, func(key identityKey, first location) {
		if !kinds[[2]string{key.group, key.kind}] {
			return
		}
		for _, id := range ix.objectsAt(first) {
			scope := SweepScope{Group: id.Group, Kind: id.Kind, Namespace: id.Namespace}
			n, swept := times[scope]
			if !swept {
				continue
			}
			if s, ok := present[scope][id.Name]; !ok || s.sweeps < n {
				deletes = append(deletes, Delete{ID: id})
			}
		}
	})
	sort.Slice(deletes, func(i, j int) bool { return deletes[i].ID.key().less(deletes[j].ID.key()) })
	return deletes
}
