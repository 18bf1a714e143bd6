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
	return SweepAll(ix, []ScopeSweep{{Scope: scope, Present: desired}})
}

// ScopeSweep is one watch's sweep: its scope and the objects its replay
// found.
type ScopeSweep struct {
	Scope   SweepScope
	Present []ObjectID
}

// SweepAll is Sweep for many scopes in one pass over the index: a replay
// of a type watched in many namespaces sweeps once per namespace, and a
// pass per sweep made a restart cost namespaces × documents. A scope swept
// more than once deletes what any of its sweeps did not find, as sweeping
// each in turn would.
func SweepAll(ix *Index, sweeps []ScopeSweep) []Delete {
	type seen struct{ sweeps, last int }
	present := map[SweepScope]map[identityKey]*seen{}
	times := map[SweepScope]int{}
	kinds := map[[2]string]bool{}
	for i, sw := range sweeps {
		set := present[sw.Scope]
		if set == nil {
			set = make(map[identityKey]*seen, len(sw.Present))
			present[sw.Scope] = set
		}
		times[sw.Scope]++
		kinds[[2]string{sw.Scope.Group, sw.Scope.Kind}] = true
		for _, id := range sw.Present {
			k := id.key()
			switch s := set[k]; {
			case s == nil:
				set[k] = &seen{sweeps: 1, last: i}
			case s.last != i: // a replay names an object once; count it once per sweep
				s.sweeps, s.last = s.sweeps+1, i
			}
		}
	}
	var deletes []Delete
	for key, locations := range ix.byID {
		if !kinds[[2]string{key.group, key.kind}] {
			continue
		}
		for _, id := range ix.objectsAt(locations[0]) {
			scope := SweepScope{Group: id.Group, Kind: id.Kind, Namespace: id.Namespace}
			n, swept := times[scope]
			if !swept {
				continue
			}
			if s := present[scope][id.key()]; s == nil || s.sweeps < n {
				deletes = append(deletes, Delete{ID: id})
			}
		}
	}
	sort.Slice(deletes, func(i, j int) bool { return deletes[i].ID.key().less(deletes[j].ID.key()) })
	return deletes
}
