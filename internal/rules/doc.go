// Package rules compiles WatchRules and ClusterWatchRules against one source
// cluster's API surface into claims: the concrete (GVR, namespace) pairs a
// GitTarget follows, with the operations it follows them for.
//
// Compilation is pure: the caller supplies the discovered types
// (discovery.Catalog.Types) and the source cluster's namespaces, so the same
// inputs always give the same, sorted result.
//
// Compilation fails closed. A rule item that names something the source
// does not serve, or a type that is not followable, claims nothing for it
// and says why in Result.Unresolved; a source namespace the GitTarget does
// not admit claims nothing and is listed in Result.Unauthorized. Wildcards
// ("*" resources, "*" or omitted groups, sourceNamespace "*") are expanded to
// concrete types and namespaces here, so no wildcard reaches a watch.
//
// # Resolution rules
//
//   - apiGroups: omitted or "*" means every served group; otherwise the
//     named groups ("" is core), each of which must be served. Groups ×
//     resources is a cross product, as in RBAC and admission rules, that
//     only has to be satisfiable: a named resource must be served and usable
//     in at least one of the groups, and groups where it is absent or
//     unusable are skipped silently once another group provides it. So
//     apiGroups ["", "apps"] with resources [configmaps, deployments] is
//     fully resolved, and "pods" with groups omitted is the core type, not
//     metrics.k8s.io's unwatchable one.
//   - apiVersions omitted: the preferred version of each (group, resource)
//     (discovery.TypeInfo.Preferred). Each named version must be served for
//     the resource (or, for "*" resources, by one of the groups); "*" means
//     every served version.
//   - resources "*": every followable type of the matched groups and
//     versions that has the rule kind's scope; the rest is skipped silently.
//     A named resource that is not followable, or has the other scope, is
//     Unresolved with the reason.
package rules
