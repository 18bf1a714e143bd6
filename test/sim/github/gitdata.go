package github

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

// Trees, blobs and commits of the Git Database API. Every endpoint answers
// 409 on an empty repository (docGitDatabase).

// gitDataRepository looks up the repository and refuses an empty one.
func (s *Server) gitDataRepository(w http.ResponseWriter, r *http.Request, doc string) (*repository, bool) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return nil, false
	}
	if repo.empty() {
		emptyRepository(w, doc)
		return nil, false
	}
	return repo, true
}

// gitDataObject looks up the repository and the object of type t the
// request's {sha} names; a sha that is not such an object is 404.
func (s *Server) gitDataObject(w http.ResponseWriter, r *http.Request, t plumbing.ObjectType, doc string) (*repository, plumbing.Hash, bool) {
	repo, ok := s.gitDataRepository(w, r, doc)
	if !ok {
		return nil, plumbing.ZeroHash, false
	}
	sha := r.PathValue("sha")
	if !plumbing.IsHash(sha) || !repo.Has(t, plumbing.NewHash(sha)) {
		notFound(w, doc)
		return nil, plumbing.ZeroHash, false
	}
	return repo, plumbing.NewHash(sha), true
}

// getTree is "Get a tree": the tree by sha or ref name; with recursive set
// (to any value) it lists subtrees too, truncated past the entry limit ("If
// truncated is true in the response then the number of items in the tree
// array exceeded our maximum limit"; "The limit for the tree array is
// 100,000 entries with a maximum size of 7 MB when using the recursive
// parameter", docTrees).
func (s *Server) getTree(w http.ResponseWriter, r *http.Request) {
	const doc = docTrees + "#get-a-tree"
	repo, ok := s.gitDataRepository(w, r, doc)
	if !ok {
		return
	}
	treeHash, ok := s.resolveTree(repo, r.PathValue("sha"))
	if !ok {
		notFound(w, doc)
		return
	}
	out := treeJSON{SHA: treeHash.String(), URL: s.apiURL(repo, "/git/trees/%s", treeHash)}
	_, recursive := r.URL.Query()["recursive"]
	if err := s.listTree(repo, treeHash, "", recursive, &out); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// resolveTree accepts a tree sha or a branch name ("the SHA1 value or ref
// name for that tree", docTrees).
func (s *Server) resolveTree(repo *repository, shaOrRef string) (plumbing.Hash, bool) {
	if plumbing.IsHash(shaOrRef) && repo.Has(plumbing.TreeObject, plumbing.NewHash(shaOrRef)) {
		return plumbing.NewHash(shaOrRef), true
	}
	head, ok := repo.branches[strings.TrimPrefix(shaOrRef, "heads/")]
	if !ok {
		return plumbing.ZeroHash, false
	}
	commit, err := repo.Commit(head)
	if err != nil {
		return plumbing.ZeroHash, false
	}
	return commit.TreeHash, true
}

func (s *Server) listTree(repo *repository, tree plumbing.Hash, prefix string, recursive bool, out *treeJSON) error {
	t, err := repo.Tree(tree)
	if err != nil {
		return err
	}
	for _, entry := range t.Entries {
		if recursive && len(out.Tree) >= s.config.treeEntryLimit {
			out.Truncated = true
			return nil
		}
		full := entry.Name
		if prefix != "" {
			full = prefix + "/" + entry.Name
		}
		out.Tree = append(out.Tree, s.treeEntry(repo, full, entry))
		if recursive && entry.Mode == filemode.Dir {
			if err := s.listTree(repo, entry.Hash, full, true, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Server) treeEntry(repo *repository, path string, entry object.TreeEntry) treeEntryJSON {
	out := treeEntryJSON{Path: path, Mode: fmt.Sprintf("%06o", uint32(entry.Mode)), SHA: entry.Hash.String()}
	switch entry.Mode {
	case filemode.Dir:
		out.Type, out.URL = "tree", s.apiURL(repo, "/git/trees/%s", entry.Hash)
	case filemode.Submodule:
		out.Type = "commit"
	default:
		out.Type, out.URL = "blob", s.apiURL(repo, "/git/blobs/%s", entry.Hash)
		if size, ok := repo.Size(plumbing.BlobObject, entry.Hash); ok {
			out.Size = &size
		}
	}
	return out
}

// treeEntryRequest is one entry of "Create a tree". sha is kept raw to tell
// an explicit null (delete the path) from an absent sha.
type treeEntryRequest struct {
	Path    string          `json:"path"`
	Mode    string          `json:"mode"`
	Type    string          `json:"type"`
	SHA     json.RawMessage `json:"sha"`
	Content *string         `json:"content"`
}

// createTree is "Create a tree": entries on top of base_tree ("Entries
// defined in the tree parameter will overwrite items from base_tree with the
// same path"), each with inline content, a sha, or sha null to delete
// (docTrees).
func (s *Server) createTree(w http.ResponseWriter, r *http.Request) {
	const doc = docTrees + "#create-a-tree"
	repo, ok := s.gitDataRepository(w, r, doc)
	if !ok {
		return
	}
	var body struct {
		BaseTree string             `json:"base_tree"`
		Tree     []treeEntryRequest `json:"tree"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	files := gitobjects.Files{}
	if body.BaseTree != "" {
		base := plumbing.NewHash(body.BaseTree)
		if !plumbing.IsHash(body.BaseTree) || !repo.Has(plumbing.TreeObject, base) {
			validationFailed(w, "base_tree is not a valid tree oid", doc)
			return
		}
		if err := repo.Flatten(base, "", files); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error(), doc)
			return
		}
	}
	for _, entry := range body.Tree {
		if err := applyTreeEntry(repo, files, entry); err != nil {
			validationFailed(w, err.Error(), doc)
			return
		}
	}
	root, err := repo.WriteFiles(files)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	}
	out := treeJSON{SHA: root.String(), URL: s.apiURL(repo, "/git/trees/%s", root)}
	if err := s.listTree(repo, root, "", false, &out); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

// applyTreeEntry applies one "Create a tree" entry to a flattened tree.
func applyTreeEntry(repo *repository, files gitobjects.Files, entry treeEntryRequest) error {
	path := strings.Trim(entry.Path, "/")
	if path == "" || path != entry.Path {
		return fmt.Errorf("tree.path %q is invalid", entry.Path)
	}
	shaNull := string(entry.SHA) == "null"
	hasSHA := len(entry.SHA) > 0 && !shaNull
	switch {
	case hasSHA && entry.Content != nil:
		return errors.New("Must supply either tree.sha or tree.content. Request will be rejected if both are present.")
	case entry.Content != nil:
		mode, err := parseMode(entry.Mode)
		if err != nil {
			return err
		}
		blob, err := repo.WriteBlob([]byte(*entry.Content))
		if err != nil {
			return err
		}
		putPath(files, path, gitobjects.Entry{Mode: mode, Hash: blob})
		return nil
	case shaNull:
		return deletePath(files, path)
	case hasSHA:
		return putObject(repo, files, path, entry)
	}
	// GitHub's wording when an entry has neither (quoted in go-github
	// issue 1371 and octokit.net issue 2836).
	return errors.New("Must supply either tree.sha or tree.content. Request will be rejected if both are present.")
}

// putObject points path at an existing object: a blob, a subtree (mode
// 040000) or a submodule commit (mode 160000, not checked: it lives in
// another repository).
func putObject(repo *repository, files gitobjects.Files, path string, entry treeEntryRequest) error {
	var sha string
	if err := json.Unmarshal(entry.SHA, &sha); err != nil || !plumbing.IsHash(sha) {
		return fmt.Errorf("tree.sha %s is not a valid object id", entry.SHA)
	}
	mode, err := parseMode(entry.Mode)
	if err != nil {
		return err
	}
	hash := plumbing.NewHash(sha)
	switch mode {
	case filemode.Dir:
		if !repo.Has(plumbing.TreeObject, hash) {
			return fmt.Errorf("tree.sha %s is not a valid tree", sha)
		}
		_ = deletePath(files, path)
		return repo.Flatten(hash, path, files)
	case filemode.Submodule:
	default:
		if !repo.Has(plumbing.BlobObject, hash) {
			return fmt.Errorf("tree.sha %s is not a valid blob", sha)
		}
	}
	putPath(files, path, gitobjects.Entry{Mode: mode, Hash: hash})
	return nil
}

// parseMode accepts the documented modes: "100644 for file (blob), 100755
// for executable (blob), 040000 for subdirectory (tree), 160000 for
// submodule (commit), or 120000 for a blob that specifies the path of a
// symlink" (docTrees).
func parseMode(mode string) (filemode.FileMode, error) {
	switch mode {
	case "100644":
		return filemode.Regular, nil
	case "100755":
		return filemode.Executable, nil
	case "040000":
		return filemode.Dir, nil
	case "160000":
		return filemode.Submodule, nil
	case "120000":
		return filemode.Symlink, nil
	}
	return filemode.Empty, fmt.Errorf("tree.mode %q is not one of 100644, 100755, 040000, 160000, 120000", mode)
}

// getBlob is "Get a blob": the content base64-encoded (docBlobs).
func (s *Server) getBlob(w http.ResponseWriter, r *http.Request) {
	const doc = docBlobs + "#get-a-blob"
	repo, h, ok := s.gitDataObject(w, r, plumbing.BlobObject, doc)
	if !ok {
		return
	}
	content, err := repo.Blob(h)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	}
	// Echoed as the request spelled it; h.String() would lower-case it.
	sha := r.PathValue("sha")
	writeJSON(w, http.StatusOK, blobJSON{
		SHA: sha, NodeID: "BLOB_" + sha, Size: len(content), URL: s.apiURL(repo, "/git/blobs/%s", sha),
		Content: wrapBase64(content), Encoding: "base64",
	})
}

// wrapBase64 encodes like GitHub, which breaks the base64 text into lines.
func wrapBase64(content []byte) string {
	encoded := base64.StdEncoding.EncodeToString(content)
	var b strings.Builder
	for len(encoded) > 60 {
		b.WriteString(encoded[:60] + "\n")
		encoded = encoded[60:]
	}
	b.WriteString(encoded + "\n")
	return b.String()
}

// createBlob is "Create a blob": content with encoding "utf-8" (default) or
// "base64" (docBlobs).
func (s *Server) createBlob(w http.ResponseWriter, r *http.Request) {
	const doc = docBlobs + "#create-a-blob"
	repo, ok := s.gitDataRepository(w, r, doc)
	if !ok {
		return
	}
	var body struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Content == nil {
		validationFailed(w, "Invalid request.\n\n\"content\" wasn't supplied.", doc)
		return
	}
	content := []byte(*body.Content)
	switch body.Encoding {
	case "", "utf-8":
	case "base64":
		decoded, err := base64.StdEncoding.DecodeString(*body.Content)
		if err != nil {
			validationFailed(w, "content is not valid Base64", doc)
			return
		}
		content = decoded
	default:
		validationFailed(w, fmt.Sprintf("encoding %q is not supported (utf-8, base64)", body.Encoding), doc)
		return
	}
	sha, err := repo.WriteBlob(content)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	}
	writeJSON(w, http.StatusCreated, shaURL{SHA: sha.String(), URL: s.apiURL(repo, "/git/blobs/%s", sha)})
}

// getCommit is "Get a commit object" (docCommits).
func (s *Server) getCommit(w http.ResponseWriter, r *http.Request) {
	const doc = docCommits + "#get-a-commit-object"
	repo, h, ok := s.gitDataObject(w, r, plumbing.CommitObject, doc)
	if !ok {
		return
	}
	out, err := s.commitResponse(repo, h)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) commitResponse(repo *repository, h plumbing.Hash) (commitJSON, error) {
	commit, err := repo.Commit(h)
	if err != nil {
		return commitJSON{}, err
	}
	out := commitJSON{
		SHA: h.String(), NodeID: "C_" + h.String(),
		URL: s.apiURL(repo, "/git/commits/%s", h), HTMLURL: s.htmlURL(repo, "/commit/%s", h),
		Author: identityOf(commit.Author), Committer: identityOf(commit.Committer),
		Tree:    shaURL{SHA: commit.TreeHash.String(), URL: s.apiURL(repo, "/git/trees/%s", commit.TreeHash)},
		Message: commit.Message, Parents: []parentJSON{},
	}
	for _, parent := range commit.ParentHashes {
		out.Parents = append(out.Parents, parentJSON{SHA: parent.String(),
			URL: s.apiURL(repo, "/git/commits/%s", parent), HTMLURL: s.htmlURL(repo, "/commit/%s", parent)})
	}
	out.Verification = verificationJSON{Reason: "unsigned"}
	if repo.appSigned[h] {
		out.Verification = verificationJSON{Verified: true, Reason: "valid"}
	}
	if commit.PGPSignature != "" {
		payload, err := signedPayload(commit)
		if err != nil {
			return commitJSON{}, err
		}
		signature := commit.PGPSignature
		out.Verification = verificationJSON{Reason: "unknown_key", Signature: &signature, Payload: &payload}
	}
	return out, nil
}

// signedPayload is the commit object without its signature: what a signer
// signs and what GitHub reports as verification.payload ("The value that
// was signed", docCommits).
func signedPayload(commit *object.Commit) (string, error) {
	encoded := &plumbing.MemoryObject{}
	if err := commit.EncodeWithoutSignature(encoded); err != nil {
		return "", err
	}
	reader, err := encoded.Reader()
	if err != nil {
		return "", err
	}
	defer reader.Close()
	payload, err := io.ReadAll(reader)
	return string(payload), err
}

// parseIdentity turns a request's author or committer into a signature.
// Without a date the current time is used (docCommits: "By default, the
// author will be the authenticated user and the current date").
func parseIdentity(in *identityJSON, fallback object.Signature, now time.Time) (object.Signature, error) {
	if in == nil {
		return object.Signature{Name: fallback.Name, Email: fallback.Email, When: now}, nil
	}
	if in.Name == "" || in.Email == "" {
		return object.Signature{}, errors.New("author and committer need a name and an email")
	}
	when := now
	if in.Date != "" {
		parsed, err := time.Parse(time.RFC3339Nano, in.Date)
		if err != nil {
			return object.Signature{}, fmt.Errorf("date %q is not ISO 8601 (YYYY-MM-DDTHH:MM:SSZ): %w", in.Date, err)
		}
		when = parsed
	}
	return object.Signature{Name: in.Name, Email: in.Email, When: when}, nil
}
