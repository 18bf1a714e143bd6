// Package sanitize projects a live Kubernetes object onto its desired state
// and renders that projection as stable YAML.
//
// It is a pure package: no I/O, no clock, no package-level state. The same
// input always yields the same projection and byte-identical YAML, which is
// what lets the writer suppress no-op commits by comparing bytes.
//
// # Projection policy (Sanitize)
//
// Sanitize returns a deep copy of the object with:
//
//   - the top-level status removed (runtime state, never desired state);
//   - metadata reduced to an allowlist: name, namespace, labels and
//     annotations. Everything else the apiserver adds or owns is dropped:
//     uid, resourceVersion, generation, creationTimestamp, deletionTimestamp,
//     deletionGracePeriodSeconds, managedFields, selfLink, ownerReferences,
//     finalizers, generateName, and any field a future Kubernetes adds. An
//     allowlist keeps new server-side metadata from leaking into Git;
//   - three volatile annotations removed, because controllers and clients
//     rewrite them without a desired-state change:
//     kubectl.kubernetes.io/last-applied-configuration,
//     deployment.kubernetes.io/revision and
//     control-plane.alpha.kubernetes.io/leader. Every other annotation is
//     kept, including kubectl.kubernetes.io/restartedAt, which lives in a pod
//     template and is desired state (it is what rolls the pods);
//   - empty labels and annotations maps, and an empty name or namespace,
//     removed, so "no labels" has one spelling;
//   - creationTimestamp: null removed from embedded object metadata at any
//     depth (pod templates, volumeClaimTemplates). Older apiservers serialise
//     the zero time as null there while newer ones omit it; it is noise, and
//     without this an apiserver upgrade would rewrite every workload file.
//
// Everything else (spec, data, stringData, binaryData, rules, webhooks, ...)
// is kept untouched. Type-specific defaulted fields (a Service's clusterIP,
// for example) are kept: telling a defaulted value from a chosen one needs
// the type's schema, which this package deliberately does not know.
//
// # Rendering policy (Marshal)
//
// Marshal writes one YAML document with 2-space indentation and
// Kubernetes-style compact sequences ("- " at the parent key's indentation
// plus two). Top-level keys come in the order apiVersion, kind, metadata,
// spec, data, stringData, binaryData, type, immutable, then any remaining
// keys alphabetically; metadata keys come as name, namespace, labels,
// annotations, then the rest alphabetically; every other map is sorted
// alphabetically. Multi-line strings are literal block scalars (|) so
// ConfigMap payloads diff line by line. A string that a YAML 1.1 or 1.2
// reader would take for another type ("true", "yes", "on", "1.0", "12:30",
// "null", "", "2024-01-01", ...) is quoted, because kubectl and kustomize
// read YAML 1.1 and would otherwise turn a ConfigMap value into a bool.
//
// The bytes are exactly yaml.v3's (an Encoder with SetIndent(2) and
// CompactSeqIndent) for the tree MarshalNode returns. The common shapes are
// written by the package's own block writer (blockyaml.go), which keeps no
// per-event queue; any tree it is not certain of goes to yaml.v3 itself,
// and the tests hold the writer to yaml.v3 byte for byte.
package sanitize
