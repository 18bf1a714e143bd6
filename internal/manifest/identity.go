package manifest

import (
	"fmt"
	"strings"
)

// ObjectID names one Kubernetes object. Group, Kind, Namespace and Name are
// its identity; Version is informational (a document written under v1beta1
// is the same object as under v1), and Resource, the plural type name, is only
// used to place a new file.
type ObjectID struct {
	Group, Version, Kind, Resource, Namespace, Name string
}

// APIVersion is the object's apiVersion: "version" for the core group,
// "group/version" otherwise.
func (id ObjectID) APIVersion() string {
	if id.Group == "" {
		return id.Version
	}
	return id.Group + "/" + id.Version
}

// String renders the identity as "group/Kind namespace/name", with "core"
// for the core group and no namespace for cluster-scoped objects.
func (id ObjectID) String() string {
	group := id.Group
	if group == "" {
		group = "core"
	}
	if id.Namespace == "" {
		return fmt.Sprintf("%s/%s %s", group, id.Kind, id.Name)
	}
	return fmt.Sprintf("%s/%s %s/%s", group, id.Kind, id.Namespace, id.Name)
}

// SameObject reports whether id and other name the same object, whatever
// their versions and resources.
func (id ObjectID) SameObject(other ObjectID) bool {
	return id.key() == other.key()
}

// identityKey is the version-insensitive identity used to match documents.
type identityKey struct {
	group, kind, namespace, name string
}

func (id ObjectID) key() identityKey {
	return identityKey{group: id.Group, kind: id.Kind, namespace: id.Namespace, name: id.Name}
}

func (k identityKey) less(other identityKey) bool {
	if k.group != other.group {
		return k.group < other.group
	}
	if k.kind != other.kind {
		return k.kind < other.kind
	}
	if k.namespace != other.namespace {
		return k.namespace < other.namespace
	}
	return k.name < other.name
}

// splitAPIVersion turns "apps/v1" into ("apps", "v1") and "v1" into ("", "v1").
func splitAPIVersion(apiVersion string) (group, version string) {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i], apiVersion[i+1:]
	}
	return "", apiVersion
}

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
