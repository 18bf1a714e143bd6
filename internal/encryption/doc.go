// Package encryption turns a sensitive object's sanitized YAML into a SOPS
// document encrypted to age recipients: no sops binary runs, and what it
// writes, `sops -d` reads back.
//
// The part of the SOPS file format the operator needs (YAML, age
// recipients, an encrypted_regex) is written here: the tree (tree.go,
// document.go), the value cipher (valuecipher.go), the MAC (sopstree.go)
// and the sops metadata block. The data key is wrapped to age recipients
// by the sops library's age master key (sops/age), so the stanzas are the
// ones sops writes. The sops root package is not imported: it links every
// cloud KMS SDK sops supports, some 34 MB of binary and 16 MiB of resident
// memory at start. The tests keep the sops library and CLI as the oracle.
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
