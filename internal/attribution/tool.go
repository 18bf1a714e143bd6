package attribution

import (
	"slices"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ChangedWith names the tool that made an object's latest change: tier 0
// of attribution, which every cluster has. It reads the object's
// metadata.managedFields: the field manager whose entry has the latest
// time. The API server stamps a manager's entry with the time of its last
// write that changed a field, so that entry is the write the watch event
// shows.
//
// Entries for the status subresource are skipped: a status-only change is
// never committed, so the manager of a status write (a controller reporting
// progress) did not make the change being committed.
//
// managedFields times have one-second resolution, and the API server sorts
// the entries by operation, time and name, so the list order says nothing
// about which of two writes in the same second came last. When several
// managers share the latest time, each of them is named, sorted by name:
// one of them made the change, and the commit does not guess which.
//
// It names a tool (kubectl-edit, helm, argocd-controller), never a person,
// so it goes into a commit trailer, not the author. Nil when no entry
// names a manager.
func ChangedWith(entries []metav1.ManagedFieldsEntry) []string {
	var latest int64
	var managers []string
	for _, e := range entries {
		manager := trailerValue(e.Manager)
		if manager == "" || e.Subresource == "status" || manager == beforeFirstApply {
			continue
		}
		var at int64
		if e.Time != nil {
			at = e.Time.Unix()
		}
		switch {
		case managers == nil || at > latest:
			latest, managers = at, []string{manager}
		case at == latest && !slices.Contains(managers, manager):
			managers = append(managers, manager)
		}
	}
	slices.Sort(managers)
	return managers
}

// beforeFirstApply is the placeholder manager the API server gives the
// fields of an object that existed before its first server-side apply
// (upgrading a client-side-applied object); it names no tool.
const beforeFirstApply = "before-first-apply"

// trailerValue makes a manager name fit one trailer line: control
// characters and runs of white space become one space. The API server
// limits a manager name to 128 characters but not its alphabet.
func trailerValue(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}
