// Package manifest decides what to write to Git: given the files of one
// GitTarget subtree and a batch of object writes, it returns the file changes
// for one commit.
//
// It is a pure package over paths and bytes. It imports nothing from
// Kubernetes, from forges/ or from any Git library, does no I/O and keeps no
// package-level state; the branch worker reads files, calls it, and writes
// what it returns.
//
// Two packages below it do the text work, imported one way
// (manifest → kustomization → yamledit): yamledit is the YAML text editor
// (a file's documents, in-place edits, content equivalence) and
// kustomization the kustomize model (kustomizations read and edited, their
// builds and namespaces, the image transformer).
//
// The pieces, in the order a worker uses them:
//
//   - Index: every .yaml/.yml document under the subtree, keyed by object
//     identity (group, kind, namespace, name; the version does not count).
//     Auxiliary files are kept but never managed: README.md, kustomization
//     files, .sops.yaml, and anything under a dot-directory or named with a
//     leading dot (.github/, .gitlab-ci.yml), since a repository root holds
//     tooling YAML that is not Kubernetes state.
//   - Check: the acceptance gate. Content the operator cannot safely manage
//     (invalid YAML, a document that is not a Kubernetes object, two
//     documents with one identity, a kustomization using a feature whose
//     output differs from the files: generators, inline or JSON 6902
//     patches, components, Helm charts, replacements, transformers, a name
//     prefix or suffix, remote bases, malformed images:/replicas: entries)
//     refuses the whole subtree, listing every offending path and feature.
//     Kustomizations are read with the kustomize API types. Plan runs it
//     first, so a refused subtree is never written into.
//   - Plan: one commit's changes for a batch of Upsert and Delete operations.
//     An existing document is edited in place and every other byte of its
//     file is kept; a new object goes by the placement ladder: where the
//     target's declared Placement puts it (RenderPath), else beside the
//     subtree's one kustomize root, whose resources: list gets the file in
//     the same commit, else to its canonical path; a file left without
//     documents is deleted (and its resources: entry with it); a no-op
//     writes nothing.
//     Every component a new path adds below the root is at most
//     MaxSegmentBytes (255) bytes: a longer one is shortened by FitSegment
//     (a prefix and a hash of it), and the file is found again by identity
//     like any other. A document in a file no checkout can create (a longer
//     component, written before this rule) is placed anew when written.
//   - Sweep: the deletes of a mark-and-sweep, scoped to one type.
//   - Apply: folds a plan's changes back into the index, so the worker can
//     plan its next commit without reading the repository again.
//
// # In-place edits
//
// A file is split into sections at "---" marker lines. Editing a document
// touches only its own section; every other section, its comments and its
// marker stay byte-identical, and deleting a document removes only its
// section.
//
// Inside the document the editor (package yamledit) changes only the text
// of the values that changed, the way a careful human would: a changed
// scalar is rewritten where it stands, in its old quoting style, keeping the comment
// after it; a removed key takes its own lines; a new key goes on a new line
// after the key it follows in the desired object, indented like its
// neighbours. Comments (above, beside and below values), key order, quoting,
// indentation, blank lines, CRLF line endings and a byte order mark of the
// untouched parts stay as they were; a flow collection that changes is
// written again in flow style. The parsed tree is used only to find where
// each value lies in the text. The edited text is parsed once to prove it
// reads exactly as the desired object (aliases and merge keys resolved); when
// the editor cannot express an edit (an anchor whose aliases would change,
// an explicit key, ...) it replaces the smallest enclosing value, and at
// worst the document's body with the desired bytes. A sensitive (SOPS)
// document is always written whole: its ciphertext changes on every
// encryption.
//
// A value a kustomization's images: or replicas: entry produces (the
// kustomization lists the file) is written back to the entry instead, only
// in the fields it declares, and the source keeps its value
// (workspace_kustomization.go);
// what the entry cannot express patches the source as usual.
//
// A document whose bytes differ from the new ones but whose YAML content is
// the same (key order, quoting style, comments) is left alone, so adopting a
// hand-written repository does not reformat every file on the first resync.
// The comparison is conservative: anything a YAML 1.1 reader (kubectl) could
// read differently counts as a change.
//
// # Sensitive objects
//
// A sensitive object (already encrypted by the caller) is written at
// {name}.sops.yaml when new, is never appended to an existing file, and is
// never written into a file that holds another document. A plaintext document
// is never written into a file that holds an encrypted (SOPS) document. When
// those rules cannot be kept, the object is refused with a Refusal and the
// rest of the batch is still planned.
package manifest
