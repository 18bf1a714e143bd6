// Package encryption turns a sensitive object's sanitized YAML into a SOPS
// document encrypted to age recipients, with the sops library (sops.Tree
// for value typing, encryption and the MAC, sops/aes for the value cipher,
// sops/age for the data key): no sops binary runs, and what it writes,
// `sops -d` reads back. The YAML around the tree is done here (see
// document.go) to keep sops' stores, and the cloud SDKs they link, out of
// the binary.
//
// It is pure: it knows nothing of Kubernetes clients, Git or the planner.
// The GitTarget controller builds an Encryptor from the target's
// spec.encryption; the branch worker calls it for every sensitive upsert
// before the manifest planner sees the YAML.
//
// Ciphertext is kept stable so Git history stays quiet: an unchanged object
// returns the bytes already in Git, and a changed value changes only that
// value's ciphertext, the MAC and lastmodified (the existing file's data key
// and IVs are reused, which needs an identity to read the file back).
package encryption
