package gitea

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/configbutler/gitops-reverser/forges"
)

// Tree lists the files of commit below the directory prefix ("" or "."
// for the whole tree); prefix "app" never matches "apps". A prefix that
// names no directory lists nothing. Gitea pages recursive trees, so every
// page is read; the request count grows with the repository, one request
// per 1000 entries (files and directories). Submodules are not files and
// are left out.
func (c *Client) Tree(ctx context.Context, commit, prefix string) ([]forges.TreeEntry, error) {
	op := "read tree of " + commit
	if err := checkObjectID(commit); err != nil {
		return nil, forges.Errorf(forges.KindNotFound, op, err)
	}
	dir, err := forges.CleanPrefix(prefix)
	if err != nil {
		return nil, forges.Errorf(forges.KindNotFound, op, err)
	}
	var files []forges.TreeEntry
	for page := 1; ; page++ {
		var listing treeResponse
		query := url.Values{
			"recursive": {"1"},
			"page":      {strconv.Itoa(page)},
			"per_page":  {strconv.Itoa(c.treePageSize)},
		}
		if err := c.call(ctx, http.MethodGet, c.repoPath("/git/trees/"+commit), query, nil, &listing); err != nil {
			return nil, classify(op, err)
		}
		for _, entry := range listing.Entries {
			if entry.Type != "blob" || !isBelow(entry.Path, dir) {
				continue
			}
			files = append(files, forges.TreeEntry{Path: entry.Path, BlobID: entry.SHA, Mode: parseFileMode(entry.Mode)})
		}
		if !listing.Truncated || len(listing.Entries) == 0 {
			return files, nil
		}
	}
}

// isBelow reports whether path lies in directory dir ("" is the root),
// comparing whole path segments.
func isBelow(path, dir string) bool {
	return dir == "" || strings.HasPrefix(path, dir+"/")
}

// parseFileMode maps Gitea's octal mode onto the three modes the forges
// share; anything else that is a blob (the deprecated group-writable mode)
// is a regular file.
func parseFileMode(mode string) forges.FileMode {
	parsed, err := strconv.ParseUint(mode, 8, 32)
	if err != nil {
		return forges.ModeRegular
	}
	switch forges.FileMode(parsed) {
	case forges.ModeExecutable:
		return forges.ModeExecutable
	case forges.ModeSymlink:
		return forges.ModeSymlink
	}
	return forges.ModeRegular
}

// Blob returns the content of the blob id. Gitea leaves the content out of
// blobs above its API limit (10 MiB by default), which is ErrTooLarge. The
// content is checked against id, because callers cache it by id forever.
func (c *Client) Blob(ctx context.Context, id string) ([]byte, error) {
	op := "read blob " + id
	if err := checkObjectID(id); err != nil {
		return nil, forges.Errorf(forges.KindNotFound, op, err)
	}
	var blob blobResponse
	if err := c.call(ctx, http.MethodGet, c.repoPath("/git/blobs/"+id), nil, nil, &blob); err != nil {
		return nil, classify(op, err)
	}
	if blob.Content == "" && blob.Size > 0 {
		return nil, forges.Errorf(forges.KindTooLarge, op,
			fmt.Errorf("gitea leaves out the content of this %d-byte blob (over its API blob size limit)", blob.Size))
	}
	if blob.Encoding != "" && blob.Encoding != "base64" {
		return nil, fmt.Errorf("%s: unexpected content encoding %q", op, blob.Encoding)
	}
	content, err := base64.StdEncoding.DecodeString(blob.Content)
	if err != nil {
		return nil, fmt.Errorf("%s: decoding the content: %w", op, err)
	}
	if got := blobID(content, len(id)); got != strings.ToLower(id) {
		return nil, forges.Errorf(forges.KindTransient, op,
			fmt.Errorf("the content gitea sent hashes to %s (%d bytes)", got, len(content)))
	}
	return content, nil
}

// checkObjectID accepts a full hexadecimal object id: 40 digits (SHA-1) or
// 64 (SHA-256, which Gitea supports for new repositories). Anything else
// would let Gitea resolve a branch or tag name instead.
func checkObjectID(id string) error {
	if len(id) != sha1HexLength && len(id) != sha256HexLength {
		return fmt.Errorf("%q is not a full object id", id)
	}
	for _, r := range id {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return fmt.Errorf("%q is not a full object id", id)
		}
	}
	return nil
}
