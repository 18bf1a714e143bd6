package gitea

import (
	"crypto/sha1" //nolint:gosec // Git's object ids are SHA-1; this is addressing, not security.
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"path"
	"strings"

	"github.com/configbutler/gitops-reverser/forges"
)

const (
	sha1HexLength   = 40
	sha256HexLength = 64
)

// blobID is the Git object id of a blob holding content, in the object
// format whose ids have hexLength digits (SHA-256 for 64, else SHA-1).
func blobID(content []byte, hexLength int) string {
	var h hash.Hash
	if hexLength == sha256HexLength {
		h = sha256.New()
	} else {
		h = sha1.New() //nolint:gosec // see the import
	}
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// finalChanges keeps the last change to each path, in the order the paths
// first appear: a commit holds only the final state of a path, and Gitea
// would apply two operations on one path one after the other against the
// same base, failing the second.
func finalChanges(changes []forges.FileChange) ([]forges.FileChange, error) {
	index := make(map[string]int, len(changes))
	final := make([]forges.FileChange, 0, len(changes))
	for _, change := range changes {
		if err := forges.ValidatePath(change.Path); err != nil {
			return nil, fmt.Errorf("change to %q: %w", change.Path, err)
		}
		if i, seen := index[change.Path]; seen {
			final[i] = change
			continue
		}
		index[change.Path] = len(final)
		final = append(final, change)
	}
	return final, nil
}

// commonDirectory is the deepest directory holding every changed path, so
// the base tree read keeps only the files a commit can touch.
func commonDirectory(changes []forges.FileChange) string {
	if len(changes) == 0 {
		return ""
	}
	common := path.Dir(changes[0].Path)
	for _, change := range changes[1:] {
		for common != "." && !isBelow(change.Path, common) {
			common = path.Dir(common)
		}
	}
	if common == "." {
		return ""
	}
	return common
}

// planOperations turns changes into Gitea file operations against base,
// the files of the commit the changes were planned on (path -> entry):
// a put of a new path is a create, which Gitea refuses if the path exists
// by then; a put of an existing path is an update and a delete is a
// delete, both carrying the blob id they replace, which Gitea checks. A
// delete of a path base does not have is already done and is left out
// (Gitea would answer 404).
func planOperations(changes []forges.FileChange, base map[string]forges.TreeEntry) []fileOperation {
	operations := make([]fileOperation, 0, len(changes))
	for _, change := range changes {
		existing, exists := base[change.Path]
		switch {
		case change.Delete && !exists:
			continue
		case change.Delete:
			operations = append(operations, fileOperation{Operation: "delete", Path: change.Path, SHA: existing.BlobID})
		case exists:
			operations = append(operations, fileOperation{Operation: "update", Path: change.Path, SHA: existing.BlobID,
				ContentBase64: base64.StdEncoding.EncodeToString(change.Content)})
		default:
			operations = append(operations, fileOperation{Operation: "create", Path: change.Path,
				ContentBase64: base64.StdEncoding.EncodeToString(change.Content)})
		}
	}
	return operations
}

// writtenBlobs maps each put path to the blob id of its content, in the
// object format of commit.
func writtenBlobs(changes []forges.FileChange, commit string) map[string]string {
	blobs := make(map[string]string, len(changes))
	for _, change := range changes {
		if !change.Delete {
			blobs[change.Path] = blobID(change.Content, len(commit))
		}
	}
	return blobs
}

// filesByPath indexes tree entries by path.
func filesByPath(entries []forges.TreeEntry) map[string]forges.TreeEntry {
	byPath := make(map[string]forges.TreeEntry, len(entries))
	for _, entry := range entries {
		byPath[entry.Path] = entry
	}
	return byPath
}

// hasParent reports whether the ChangeFiles answer describes a commit
// whose only parent is parent.
func hasParent(created *changeFilesResponse, parent string) bool {
	return created.Commit != nil && len(created.Commit.Parents) == 1 &&
		strings.EqualFold(created.Commit.Parents[0].SHA, parent)
}
