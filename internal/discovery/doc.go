// Package discovery keeps one source cluster's API surface: every served
// (group, version, resource) with its kind, scope, verbs, preferred-version
// flag and the operator's verdicts on it (followable, sensitive).
//
// A Catalog is refreshed from the cluster's discovery endpoint and answers
// "which types exist and may be followed?" for rule compilation
// (internal/rules) and the watch layer. It is one per source cluster.
//
// # Why the catalog does not simply mirror the last scan
//
// A type that disappears from the catalog stops being claimed, its watch is
// closed, and the files it wrote are eventually swept from Git. Discovery is
// not a reliable witness of absence: an aggregated API server that is
// restarting fails its group/version, and a CRD update can briefly drop a
// version from the served set. The catalog therefore:
//
//   - keeps serving the last known facts of a group/version whose discovery
//     failed (discovery.ErrGroupDiscoveryFailed), because a failure says
//     nothing about what the server serves; and
//   - keeps a group/version that vanished from a scan for a grace period
//     (Catalog.Grace, default two minutes) and removes it only when it is
//     still absent from a scan taken after the grace elapsed.
//
// # Followability
//
// Followability (see Followability) is one decision function: a type is
// followed iff it supports get, list and watch and is not runtime-only. The
// runtime-only list (RuntimeOnlyResources) names the types whose objects are
// runtime records or derived state, never desired state. Objects carrying a
// controller ownerReference are filtered per object, not per type; that half
// of the policy is IsControllerOwned.
package discovery
