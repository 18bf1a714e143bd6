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
	"github.com/configbutler/gitops-reverser/gitfile"
)

// Tree lists the files of commit below the directory prefix ("" or "."
// for the whole tree); prefix "app" never matches "apps". A prefix that
// names no directory lists nothing. Submodules are not files and are left
// out.
//
// Gitea pages recursive trees (one request per 1000 entries, files and
// directories), in Git's order, so the files below a prefix are one run of
// the listing. Reading stops at the end of that run. When the first page
// holds none of it and there are more pages, the client walks down to the
// prefix's own tree instead (one request per path segment) and pages
// through that: a target's reads grow with its own files, not with the
// repository's.
//
// With a Pusher the tree is read from the commit's files fetched over the
// Git protocol (one depth-1 fetch, which the next push builds on), and
// Blob finds their contents without a request.
func (c *Client) Tree(ctx context.Context, commit, prefix string) ([]forges.TreeEntry, error) {
	if c.pushes() {
		entries, err := c.pusher.Tree(ctx, commit, prefix)
		if !c.refused(err) {
			return entries, err
		}
	}
	op := "read tree of " + commit
	if err := checkObjectID(commit); err != nil {
		return nil, forges.Errorf(forges.KindNotFound, op, err)
	}
	dir, err := forges.CleanPrefix(prefix)
	if err != nil {
		return nil, forges.Errorf(forges.KindNotFound, op, err)
	}
	first, err := c.treePage(ctx, commit, true, 1)
	if err != nil {
		return nil, classify(op, err)
	}
	if first.Truncated && dir != "" && !holdsBelow(first, dir) {
		subtree, found, err := c.descend(ctx, commit, dir)
		if err != nil || !found {
			return nil, classify(op, err)
		}
		files, err := c.files(ctx, subtree, nil, "")
		for i := range files {
			files[i].Path = dir + "/" + files[i].Path
		}
		return files, classify(op, err)
	}
	files, err := c.files(ctx, commit, &first, dir)
	return files, classify(op, err)
}

// holdsBelow reports whether the listing has dir's own entry or anything
// below it: the run has begun.
func holdsBelow(listing treeResponse, dir string) bool {
	for _, entry := range listing.Entries {
		if entry.Path == dir || isBelow(entry.Path, dir) {
			return true
		}
	}
	return false
}

// files lists the blobs below dir ("" for all) of the tree-ish sha,
// reading pages (first is page 1 when already read) until the run of
// entries below dir has ended.
func (c *Client) files(ctx context.Context, sha string, first *treeResponse, dir string) ([]forges.TreeEntry, error) {
	var files []forges.TreeEntry
	inRun := false
	for page := 1; ; page++ {
		listing := first
		if page > 1 || listing == nil {
			next, err := c.treePage(ctx, sha, true, page)
			if err != nil {
				return nil, err
			}
			listing = &next
		}
		for _, entry := range listing.Entries {
			below := isBelow(entry.Path, dir)
			if inRun && !below {
				return files, nil
			}
			inRun = inRun || below || entry.Path == dir
			if below && entry.Type == "blob" {
				files = append(files, forges.TreeEntry{Path: entry.Path, BlobID: entry.SHA, Mode: parseFileMode(entry.Mode)})
			}
		}
		if !listing.Truncated || len(listing.Entries) == 0 {
			return files, nil
		}
	}
}

// descend finds the tree at dir by listing one directory per segment.
func (c *Client) descend(ctx context.Context, commit, dir string) (string, bool, error) {
	sha := commit
	for _, segment := range strings.Split(dir, "/") {
		next, found, err := c.child(ctx, sha, segment)
		if err != nil || !found {
			return "", false, err
		}
		sha = next
	}
	return sha, true, nil
}

// child is the id of the directory name in the tree sha.
func (c *Client) child(ctx context.Context, sha, name string) (string, bool, error) {
	for page := 1; ; page++ {
		listing, err := c.treePage(ctx, sha, false, page)
		if err != nil {
			return "", false, err
		}
		for _, entry := range listing.Entries {
			if entry.Path == name {
				return entry.SHA, entry.Type == "tree", nil
			}
		}
		if !listing.Truncated || len(listing.Entries) == 0 {
			return "", false, nil
		}
	}
}

// treePage is one page of "Gets the tree of a repository"
// (GET /repos/{owner}/{repo}/git/trees/{sha}).
func (c *Client) treePage(ctx context.Context, sha string, recursive bool, page int) (treeResponse, error) {
	var listing treeResponse
	query := url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(c.treePageSize)}}
	if recursive {
		query.Set("recursive", "1")
	}
	err := c.call(ctx, http.MethodGet, c.repoPath("/git/trees/"+sha), query, nil, &listing)
	return listing, err
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

// blobReadConcurrency is how many blob reads callers may keep in flight:
// Gitea serves each request on its own goroutine, so a restart that must
// read a hundred changed files waits for about an eighth of the round
// trips, and eight is few enough not to crowd a small server.
const blobReadConcurrency = 8

// ReadConcurrency tells callers they may read blobs blobReadConcurrency
// at a time.
func (c *Client) ReadConcurrency() int { return blobReadConcurrency }

// Blob returns the content of the blob id. Gitea leaves the content out of
// blobs above its API limit (10 MiB by default), which is ErrTooLarge. The
// content is checked against id, because callers cache it by id forever.
func (c *Client) Blob(ctx context.Context, id string) ([]byte, error) {
	if c.pusher != nil {
		if content, err := c.pusher.Blob(ctx, id); err == nil {
			return content, nil // a file of a commit fetched or pushed
		}
	}
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
	if got := gitfile.BlobID(content, id); got != strings.ToLower(id) {
		return nil, forges.Errorf(forges.KindTransient, op,
			fmt.Errorf("the content gitea sent hashes to %s (%d bytes)", got, len(content)))
	}
	return content, nil
}

const (
	sha1HexLength   = 40
	sha256HexLength = 64
)

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
