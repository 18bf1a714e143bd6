// Package kustomization is the planner's model of the kustomizations in a
// GitTarget subtree: each file read once with the kustomize API types and
// the features the operator refuses in it (File, Read), the builds they
// make (BuildRoots, and BuildNamespaces: the namespace a build gives each
// file it lists), a kustomization's resources:, replicas: and images:
// edited in place (Edit, EditFile), and kustomize's image transformer run
// forwards and backwards (ApplyImage, InvertImage).
//
// Paths are the repository's ("/"-separated, relative to its root). It knows
// nothing of Kubernetes object identities or of Git: internal/manifest
// decides which documents are which objects, where new ones go and when a
// value is written through to a kustomization.
package kustomization
