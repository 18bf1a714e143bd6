// Package gitfile holds the one description of a change to a file of a Git
// tree that travels from the manifest planner through the branch worker to
// a forge. It is a leaf: it imports nothing of this module, so the planner
// (internal/manifest) and the forges (forges/...), which import nothing
// from each other, can both speak it. It is not internal because the
// forges' API is public and names it.
package gitfile

import (
	"crypto/sha1" //nolint:gosec // Git's object ids are SHA-1; this is addressing, not security.
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
)

// Change puts Content at Path, or deletes Path.
type Change struct {
	// Path relative to the repository root, with forward slashes.
	Path    string
	Content []byte
	Delete  bool
	// BaseBlob is the id of the blob Path holds in the commit's parent (in
	// a chain, the commit before it); "" when the path does not exist
	// there. The branch worker knows it from the tree it read and the
	// commits it made, so a forge that must say create, update or delete,
	// or name the blob it replaces, needs no tree read of its own. A
	// forge never trusts it to overwrite another writer's change: a stale
	// base blob goes with a head that moved, which the commit's
	// compare-and-swap refuses, and a forge that sends it (Gitea) has it
	// checked by the server.
	BaseBlob string
}

// sha256HexLength is the length of an object id in a SHA-256 repository.
const sha256HexLength = 64

// BlobID is the Git object id of a blob holding content, in the object
// format of the repository whose ids look like like: SHA-256 when like has
// 64 hex digits, SHA-1 otherwise (and when like is "", Git's default).
func BlobID(content []byte, like string) string {
	var h hash.Hash
	if len(like) == sha256HexLength {
		h = sha256.New()
	} else {
		h = sha1.New() //nolint:gosec // see the import
	}
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
