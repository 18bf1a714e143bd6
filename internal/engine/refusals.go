package engine

import (
	"cmp"
	"slices"

	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// Refusal is one object the operator does not write, and why.
type Refusal struct {
	Object manifest.ObjectID
	// Reason is the mirror's or the planner's refusal reason, one of
	// api/v1alpha3's (EncryptionRequired, AuxiliaryPath, ...).
	Reason string
	// Detail says what in particular, when the planner knows.
	Detail string
}

// refusalKey names an object whatever version it was read at.
type refusalKey struct{ group, kind, namespace, name string }

func keyOfObject(id manifest.ObjectID) refusalKey {
	return refusalKey{id.Group, id.Kind, id.Namespace, id.Name}
}

type refusalEntry struct {
	Refusal
	// byPlanner: the branch worker's planner refused it, so only a later
	// plan that carries the object lifts it; the mirror's refusals are
	// lifted when the object is next forwarded.
	byPlanner bool
	// announced: the GitTarget controller has emitted its Event.
	announced bool
}

// refusalSet holds the objects of one target refused now: an object leaves
// it when it is written, deleted, or a replay no longer reports it.
type refusalSet map[refusalKey]*refusalEntry

// refuse records a refusal; it reports whether the object is newly refused
// (or refused for another reason than before).
func (s refusalSet) refuse(r Refusal, byPlanner bool) bool {
	k := keyOfObject(r.Object)
	if old := s[k]; old != nil && old.Reason == r.Reason {
		old.Refusal, old.byPlanner = r, byPlanner
		return false
	}
	s[k] = &refusalEntry{Refusal: r, byPlanner: byPlanner}
	return true
}

// forwarded lifts the mirror's refusal of an object it now forwards, and
// any refusal of an object that was deleted.
func (s refusalSet) forwarded(id manifest.ObjectID, deleted bool) bool {
	k := keyOfObject(id)
	old := s[k]
	if old == nil || (old.byPlanner && !deleted) {
		return false
	}
	delete(s, k)
	return true
}

// planned lifts the planner's refusals of objects a plan carried: the
// refusals the plan made again follow in refuse.
func (s refusalSet) planned(carried []manifest.ObjectID) bool {
	changed := false
	for _, id := range carried {
		k := keyOfObject(id)
		if old := s[k]; old != nil && old.byPlanner {
			delete(s, k)
			changed = true
		}
	}
	return changed
}

// replayed drops the refusals of scope's objects the replay did not report:
// they were deleted while no watch ran.
func (s refusalSet) replayed(scope manifest.SweepScope, reported []watch.ObjectKey) bool {
	if len(s) == 0 {
		return false
	}
	seen := make(map[watch.ObjectKey]bool, len(reported))
	for _, k := range reported {
		seen[k] = true
	}
	changed := false
	for k := range s {
		inScope := k.group == scope.Group && k.kind == scope.Kind && (scope.Namespace == "" || k.namespace == scope.Namespace)
		if inScope && !seen[watch.ObjectKey{Namespace: k.namespace, Name: k.name}] {
			delete(s, k)
			changed = true
		}
	}
	return changed
}

// retain drops the refusals of objects no claim selects any more.
func (s refusalSet) retain(claims []rules.Claim) {
	for k := range s {
		if !slices.ContainsFunc(claims, func(c rules.Claim) bool {
			return c.GVR.Group == k.group && c.Kind == k.kind && (c.Namespace == "" || c.Namespace == k.namespace)
		}) {
			delete(s, k)
		}
	}
}

// list returns the refusals sorted by reason, then object.
func (s refusalSet) list() []Refusal {
	out := make([]Refusal, 0, len(s))
	for _, e := range s {
		out = append(out, e.Refusal)
	}
	sortRefusals(out)
	return out
}

// unannounced returns the refusals without an Event yet, sorted, and marks
// them announced.
func (s refusalSet) unannounced() []Refusal {
	var out []Refusal
	for _, e := range s {
		if !e.announced {
			e.announced = true
			out = append(out, e.Refusal)
		}
	}
	sortRefusals(out)
	return out
}

func sortRefusals(rs []Refusal) {
	slices.SortFunc(rs, func(a, b Refusal) int {
		return cmp.Or(cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Object.String(), b.Object.String()))
	})
}
