package github

import (
	"encoding/base64"
	"net/http"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

// getRepository is "Get a repository" (docRepos).
func (s *Server) getRepository(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, repositoryJSON{
		ID: repo.id, NodeID: "R_" + repo.name, Name: repo.name, FullName: repo.owner + "/" + repo.name,
		Owner: ownerJSON{Login: repo.owner, Type: "Organization"}, Private: true,
		HTMLURL: s.htmlURL(repo, ""), URL: s.apiURL(repo, ""), DefaultBranch: repo.defaultBranch,
	})
}

// requestCredential is who the request authenticated as (set by ServeHTTP).
func requestCredential(r *http.Request) *credential {
	cred, _ := r.Context().Value(credentialKey{}).(*credential)
	if cred == nil {
		return &credential{}
	}
	return cred
}

// createCommit is "Create a commit": message, tree, parents, and optional
// author, committer and signature. "By default, the author will be the
// authenticated user and the current date"; "By default, committer will use
// the information set in author" (docCommits). parents: "If omitted or
// empty, the commit will be written as a root commit. For a single parent,
// an array of one SHA should be provided; for a merge commit, an array of
// more than one should be provided" (docCommits): every parent is kept, in
// order, and each must be a commit of the repository.
func (s *Server) createCommit(w http.ResponseWriter, r *http.Request) {
	const doc = docCommits + "#create-a-commit"
	repo, ok := s.gitDataRepository(w, r, doc)
	if !ok {
		return
	}
	var body struct {
		Message   *string       `json:"message"`
		Tree      string        `json:"tree"`
		Parents   []string      `json:"parents"`
		Author    *identityJSON `json:"author"`
		Committer *identityJSON `json:"committer"`
		Signature string        `json:"signature"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Message == nil {
		validationFailed(w, "Invalid request.\n\n\"message\" wasn't supplied.", doc)
		return
	}
	if !plumbing.IsHash(body.Tree) || !repo.Has(plumbing.TreeObject, plumbing.NewHash(body.Tree)) {
		validationFailed(w, "Tree SHA does not exist", doc)
		return
	}
	commit := &object.Commit{Message: *body.Message, TreeHash: plumbing.NewHash(body.Tree), PGPSignature: body.Signature}
	for _, parent := range body.Parents {
		if !plumbing.IsHash(parent) || !repo.Has(plumbing.CommitObject, plumbing.NewHash(parent)) {
			validationFailed(w, "Parent SHA does not exist or is not a commit object", doc)
			return
		}
		commit.ParentHashes = append(commit.ParentHashes, plumbing.NewHash(parent))
	}
	var err error
	now := s.config.now()
	if commit.Author, err = parseIdentity(body.Author, requestCredential(r).identity, now); err != nil {
		validationFailed(w, err.Error(), doc)
		return
	}
	commit.Committer = commit.Author
	if body.Committer != nil {
		if commit.Committer, err = parseIdentity(body.Committer, commit.Author, now); err != nil {
			validationFailed(w, err.Error(), doc)
			return
		}
	}
	// An App's commit made through the API with no author, committer or
	// signature is signed by GitHub and shows as Verified
	// (https://docs.github.com/authentication/managing-commit-signature-verification/about-commit-signature-verification#signature-verification-for-bots).
	appSigned := requestCredential(r).kind == "installation" && body.Author == nil && body.Committer == nil && body.Signature == ""
	s.storeAndRespond(w, repo, commit, http.StatusCreated, doc, appSigned)
}

func (s *Server) storeAndRespond(w http.ResponseWriter, repo *repository, commit *object.Commit, status int, doc string, appSigned bool) {
	h, err := repo.WriteCommit(commit)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	}
	if appSigned {
		repo.appSigned[h] = true
	}
	out, err := s.commitResponse(repo, h)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), doc)
		return
	}
	writeJSON(w, status, out)
}

// contentsRequest is the body of "Create or update file contents".
type contentsRequest struct {
	Message   *string       `json:"message"`
	Content   *string       `json:"content"`
	SHA       string        `json:"sha"`
	Branch    string        `json:"branch"`
	Committer *identityJSON `json:"committer"`
	Author    *identityJSON `json:"author"`
}

// putContents is "Create or update file contents": one file, one commit on
// the branch (default: the repository's default branch). It is how an
// empty repository gets its first commit ("For an empty repository, you can
// use the Create or update file contents endpoint to create content and
// initialize the repository", docGitDatabase). Updating an existing file
// requires its blob sha (docContents: "Required if you are updating a
// file"), and a sha that does not match is 409.
func (s *Server) putContents(w http.ResponseWriter, r *http.Request) {
	repo, ok := s.lookupRepository(w, r)
	if !ok {
		return
	}
	var body contentsRequest
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Message == nil || body.Content == nil {
		validationFailed(w, "Invalid request.\n\n\"message\" and \"content\" are required.", docContents)
		return
	}
	content, err := base64.StdEncoding.DecodeString(*body.Content)
	if err != nil {
		validationFailed(w, "content is not valid Base64", docContents)
		return
	}
	branch := body.Branch
	if branch == "" {
		branch = repo.defaultBranch
	}
	filePath := r.PathValue("path")
	commit, status, ok := s.contentsCommit(w, r, repo, branch, filePath, content, body)
	if !ok {
		return
	}
	h, err := repo.WriteCommit(commit)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), docContents)
		return
	}
	if repo.empty() {
		repo.defaultBranch = branch
	}
	repo.branches[branch] = h
	s.respondContents(w, repo, h, filePath, len(content), status)
}

// contentsCommit builds the commit of a contents request on the head of
// branch, or as the first commit of an empty repository.
func (s *Server) contentsCommit(w http.ResponseWriter, r *http.Request, repo *repository, branch, filePath string,
	content []byte, body contentsRequest) (*object.Commit, int, bool) {
	files, status := gitobjects.Files{}, http.StatusCreated
	commit := &object.Commit{Message: *body.Message}
	if !repo.empty() {
		var exists bool
		var err error
		if files, exists, err = repo.filesAt(branch); err != nil || !exists {
			notFound(w, docContents)
			return nil, 0, false
		}
		if existing, ok := files[filePath]; ok {
			if body.SHA == "" {
				validationFailed(w, "Invalid request.\n\n\"sha\" wasn't supplied.", docContents)
				return nil, 0, false
			}
			if body.SHA != existing.Hash.String() {
				writeError(w, http.StatusConflict, filePath+" does not match "+body.SHA, docContents)
				return nil, 0, false
			}
			status = http.StatusOK
		}
		commit.ParentHashes = []plumbing.Hash{repo.branches[branch]}
	}
	blob, err := repo.WriteBlob(content)
	if err == nil {
		putPath(files, filePath, gitobjects.Entry{Mode: filemode.Regular, Hash: blob})
		commit.TreeHash, err = repo.WriteFiles(files)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), docContents)
		return nil, 0, false
	}
	// "committer: The person that is committing the file. Default: the
	// authenticated user"; "author: Default: The committer or the
	// authenticated user if you omit committer" (docContents).
	now := s.config.now()
	if commit.Committer, err = parseIdentity(body.Committer, requestCredential(r).identity, now); err == nil {
		commit.Author, err = parseIdentity(body.Author, commit.Committer, now)
	}
	if err != nil {
		validationFailed(w, err.Error(), docContents)
		return nil, 0, false
	}
	return commit, status, true
}

func (s *Server) respondContents(w http.ResponseWriter, repo *repository, h plumbing.Hash, filePath string, size, status int) {
	out, err := s.commitResponse(repo, h)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), docContents)
		return
	}
	commit, _ := repo.Commit(h)
	files, _ := repo.FilesOf(commit.TreeHash)
	blob := files[filePath].Hash.String()
	writeJSON(w, status, map[string]any{
		"content": map[string]any{
			"name": path.Base(filePath), "path": filePath, "sha": blob, "size": size, "type": "file",
			"url":      s.apiURL(repo, "/contents/%s", filePath),
			"html_url": s.htmlURL(repo, "/blob/%s/%s", h, filePath),
			"git_url":  s.apiURL(repo, "/git/blobs/%s", blob),
		},
		"commit": out,
	})
}
