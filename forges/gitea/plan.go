package gitea

import (
	//nolint:gosec // Git's object ids are SHA-1; this is addressing, not security.

	"encoding/base64"
	"fmt"
	"strings"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// finalChanges keeps the last change to each path, in the order the paths
// first appear: a commit holds only the final state of a path, and Gitea
// would apply two operations on one path one after the other against the
// same base, failing the second.
func finalChanges(changes []gitfile.Change) ([]gitfile.Change, error) {
	index := make(map[string]int, len(changes))
	final := make([]gitfile.Change, 0, len(changes))
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

// planOperations turns changes into Gitea file operations from their base
// blobs, so no tree is read to plan a commit: a put of a path without one
// is a create, which Gitea refuses if the path exists by then; a put of a
// path with one is an update and a delete is a delete, both carrying the
// blob id they replace, which Gitea checks ("sha does not match": a
// conflict, so a stale base blob never overwrites another writer's
// change). A delete of a path without a base blob is already done and is
// left out (Gitea would answer 404).
func planOperations(changes []gitfile.Change) []fileOperation {
	operations := make([]fileOperation, 0, len(changes))
	for _, change := range changes {
		exists := change.BaseBlob != ""
		switch {
		case change.Delete && !exists:
			continue
		case change.Delete:
			operations = append(operations, fileOperation{Operation: "delete", Path: change.Path, SHA: change.BaseBlob})
		case exists:
			operations = append(operations, fileOperation{Operation: "update", Path: change.Path, SHA: change.BaseBlob,
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
func writtenBlobs(changes []gitfile.Change, commit string) map[string]string {
	blobs := make(map[string]string, len(changes))
	for _, change := range changes {
		if !change.Delete {
			blobs[change.Path] = gitfile.BlobID(change.Content, commit)
		}
	}
	return blobs
}

// hasParent reports whether the ChangeFiles answer describes a commit
// whose only parent is parent.
func hasParent(created *changeFilesResponse, parent string) bool {
	return created.Commit != nil && len(created.Commit.Parents) == 1 &&
		strings.EqualFold(created.Commit.Parents[0].SHA, parent)
}
