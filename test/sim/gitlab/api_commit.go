package gitlab

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configbutler/gitops-reverser/test/sim/gitobjects"
)

// The refusals of POST /projects/:id/repository/commits. The API answers
// each with 400 {"message": ...}
// (https://docs.gitlab.com/api/commits/#create-a-commit-with-multiple-files-and-actions
// documents the endpoint, not its messages; these are GitLab's and
// Gitaly's own words, from the sources named on each).
const (
	// Files::MultiService#validate_file_status!, for update, move, delete
	// and chmod actions carrying last_commit_id:
	// https://gitlab.com/gitlab-org/gitlab/-/blob/master/app/services/files/multi_service.rb
	msgFileChanged = "The file has changed since you started editing it: %s"
	// Gitaly's index errors, surfaced verbatim (IndexError.Error in
	// gitlab-org/gitaly v15 internal/git2go/commit.go).
	msgFileExists      = "A file with this name already exists"
	msgFileMissing     = "A file with this name doesn't exist"
	msgDirectoryExists = "A directory with this name already exists"
	msgTraversal       = "Path cannot include directory traversal"
	// Commits::CreateService#validate_start_sha!, #validate_on_branch! and
	// #validate_branch_existence!:
	// https://gitlab.com/gitlab-org/gitlab/-/blob/master/app/services/commits/create_service.rb
	msgNotOnBranch   = "You can only create or edit files when you are on a branch"
	msgBranchExists  = "A branch called '%s' already exists. Switch to that branch in order to make changes"
	msgInvalidStart  = "Invalid start_sha '%s'"
	msgMissingStart  = "Cannot find start_sha '%s'"
	msgCannotPush    = "403 Forbidden - You are not allowed to push into this branch"
	msgNotSimulated  = "the simulator does not implement %s"
	msgStartConflict = "start_branch, start_sha are mutually exclusive"
)

// commitBody is the JSON body of the commits API.
// https://docs.gitlab.com/api/commits/#create-a-commit-with-multiple-files-and-actions
type commitBody struct {
	Branch        string          `json:"branch"`
	CommitMessage string          `json:"commit_message"`
	StartBranch   string          `json:"start_branch"`
	StartSHA      string          `json:"start_sha"`
	StartProject  json.RawMessage `json:"start_project"`
	Actions       []commitAction  `json:"actions"`
	AuthorEmail   string          `json:"author_email"`
	AuthorName    string          `json:"author_name"`
	Force         bool            `json:"force"`
}

type commitAction struct {
	Action          string  `json:"action"`
	FilePath        string  `json:"file_path"`
	PreviousPath    string  `json:"previous_path"`
	Content         *string `json:"content"`
	Encoding        string  `json:"encoding"`
	LastCommitID    string  `json:"last_commit_id"`
	ExecuteFilemode *bool   `json:"execute_filemode"`
}

// refusal is a 400 (or other status) the commits API answers with.
type refusal struct {
	status  int
	message string
}

func badRequest(format string, args ...any) *refusal {
	return &refusal{status: http.StatusBadRequest, message: fmt.Sprintf(format, args...)}
}

// postCommit makes one commit from a list of actions, atomically: every
// check passes and the branch moves, or nothing changes. GitLab applies
// the same checks in this order (lib/api/commits.rb, then
// Commits::CreateService#validate!, then the actions in Gitaly).
func (s *Server) postCommit(w http.ResponseWriter, r *http.Request, p *project, user User) {
	var body commitBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Invalid json", "error": "Invalid json"})
		return
	}
	c, refused := s.commitActions(p, user, body)
	if refused != nil {
		writeMessage(w, refused.status, refused.message)
		return
	}
	writeJSON(w, http.StatusCreated, s.commitJSON(p, c))
}

func (s *Server) commitActions(p *project, user User, body commitBody) (*object.Commit, *refusal) {
	if user.ReadOnly {
		return nil, &refusal{status: http.StatusForbidden, message: msgCannotPush}
	}
	if refused := validateCommitBody(body); refused != nil {
		return nil, refused
	}
	parent, startBranch, refused := s.startingPoint(p, body)
	if refused != nil {
		return nil, refused
	}
	if refused := p.checkLastCommitIDs(startBranch, body.Actions); refused != nil {
		return nil, refused
	}
	base, err := p.filesOf(parent)
	if err != nil {
		return nil, &refusal{status: http.StatusInternalServerError, message: err.Error()}
	}
	if refused := p.applyActions(base, body.Actions); refused != nil {
		return nil, refused
	}
	c, err := s.storeCommit(p, body, user, base, parent)
	if err != nil {
		return nil, &refusal{status: http.StatusInternalServerError, message: err.Error()}
	}
	return c, nil
}

// validateCommitBody mirrors validate_commits_attrs! in
// https://gitlab.com/gitlab-org/gitlab/-/blob/master/lib/api/commits.rb.
func validateCommitBody(body commitBody) *refusal {
	switch {
	case body.Branch == "":
		return badRequest("branch is required")
	case body.CommitMessage == "":
		return badRequest("commit_message is required")
	case len(body.Actions) == 0:
		return badRequest("actions is required")
	case body.StartBranch != "" && body.StartSHA != "":
		return badRequest(msgStartConflict)
	case body.Force:
		return badRequest(msgNotSimulated, "force")
	case len(body.StartProject) > 0:
		return badRequest(msgNotSimulated, "start_project")
	}
	for i, a := range body.Actions {
		switch {
		case a.Action != "create" && a.Action != "update" && a.Action != "move" && a.Action != "delete" && a.Action != "chmod":
			return badRequest("actions[%d][action] must be one of: create, update, move, delete, chmod", i)
		case a.FilePath == "":
			return badRequest("actions[%d][file_path] is required", i)
		case a.Encoding != "" && a.Encoding != "text" && a.Encoding != "base64":
			return badRequest("actions[%d][encoding] must be text or base64", i)
		case a.Action == "update" && a.Content == nil:
			return badRequest("actions[%d][content] is required for update action", i)
		case a.Action == "move" && a.PreviousPath == "":
			return badRequest("actions[%d][previous_path] is required for move action", i)
		case a.Action == "chmod" && a.ExecuteFilemode == nil:
			return badRequest("actions[%d][execute_filemode] is required for chmod action", i)
		}
	}
	return nil
}

// startingPoint is the commit the new one builds on, and the start branch
// the last_commit_id checks read. The API starts from the target branch
// itself unless start_branch or start_sha names another point
// (`attrs[:start_branch] ||= attrs[:branch_name] unless attrs[:start_sha]`
// in lib/api/commits.rb); a start other than the branch itself creates
// the branch and is refused when it already exists. In an empty
// repository there is nothing to start from: the first commit has no
// parent.
func (s *Server) startingPoint(p *project, body commitBody) (*object.Commit, string, *refusal) {
	startBranch := body.StartBranch
	if startBranch == "" && body.StartSHA == "" {
		startBranch = body.Branch
	}
	var parent *object.Commit
	if body.StartSHA != "" {
		if !plumbing.IsHash(body.StartSHA) {
			return nil, "", badRequest(msgInvalidStart, body.StartSHA)
		}
		c, err := p.Commit(plumbing.NewHash(body.StartSHA))
		if err != nil {
			return nil, "", badRequest(msgMissingStart, body.StartSHA)
		}
		parent = c
	}
	_, startExists := p.branches[startBranch]
	if startBranch != "" && !p.empty() && !startExists {
		return nil, "", badRequest(msgNotOnBranch)
	}
	different := startBranch != body.Branch || body.StartSHA != ""
	if _, exists := p.branches[body.Branch]; exists && different && !p.empty() {
		return nil, "", badRequest(msgBranchExists, body.Branch)
	}
	if parent == nil && startExists {
		c, err := p.Commit(p.branches[startBranch])
		if err != nil {
			return nil, "", &refusal{status: http.StatusInternalServerError, message: err.Error()}
		}
		parent = c
	}
	return parent, startBranch, nil
}

// checkLastCommitIDs refuses an update, move, delete or chmod whose file
// changed after the commit the client named. GitLab compares the file's
// last commit on the start branch with its last commit as of
// last_commit_id (Files::BaseService#file_has_changed?,
// https://gitlab.com/gitlab-org/gitlab/-/blob/master/app/services/files/base_service.rb;
// GitLab 16-era sources on; older ones compared last_commit_id with the
// file's own last commit), so naming the head the client read is enough:
// the file need not have changed in that very commit. A missing start
// branch, or a path absent from either history, is not a change.
func (p *project) checkLastCommitIDs(startBranch string, actions []commitAction) *refusal {
	head, ok := p.branches[startBranch]
	if !ok {
		return nil
	}
	for _, a := range actions {
		if a.Action == "create" || a.LastCommitID == "" {
			continue
		}
		path := a.FilePath
		if a.PreviousPath != "" {
			path = a.PreviousPath
		}
		onBranch, found, err := p.lastCommitForPath(head, path)
		if err != nil || !found {
			continue
		}
		named, ok := p.resolve(a.LastCommitID)
		if !ok {
			continue
		}
		asNamed, found, err := p.lastCommitForPath(named.Hash, path)
		if err != nil || !found {
			continue
		}
		if onBranch != asNamed {
			return badRequest(msgFileChanged, path)
		}
	}
	return nil
}

// applyActions changes the flattened tree the way Gitaly's
// UserCommitFiles does, refusing with Gitaly's index errors.
func (p *project) applyActions(tree gitobjects.Files, actions []commitAction) *refusal {
	for _, a := range actions {
		if refused := checkPath(a.FilePath); refused != nil {
			return refused
		}
		content, err := decodeContent(a)
		if err != nil {
			return badRequest("%s", err.Error())
		}
		if refused := p.applyAction(tree, a, content); refused != nil {
			return refused
		}
	}
	return nil
}

func (p *project) applyAction(tree gitobjects.Files, a commitAction, content []byte) *refusal {
	current, exists := tree[a.FilePath]
	switch a.Action {
	case "create":
		if exists {
			return badRequest(msgFileExists)
		}
		return p.put(tree, a.FilePath, content, filemode.Regular)
	case "update":
		if !exists {
			return badRequest(msgFileMissing)
		}
		return p.put(tree, a.FilePath, content, current.Mode)
	case "delete":
		if !exists {
			return badRequest(msgFileMissing)
		}
		delete(tree, a.FilePath)
	case "move":
		return p.move(tree, a, content)
	case "chmod":
		if !exists {
			return badRequest(msgFileMissing)
		}
		current.Mode = filemode.Regular
		if *a.ExecuteFilemode {
			current.Mode = filemode.Executable
		}
		tree[a.FilePath] = current
	}
	return nil
}

// move renames previous_path to file_path, keeping the content unless the
// action carries new content.
func (p *project) move(tree gitobjects.Files, a commitAction, content []byte) *refusal {
	if refused := checkPath(a.PreviousPath); refused != nil {
		return refused
	}
	previous, exists := tree[a.PreviousPath]
	if !exists {
		return badRequest(msgFileMissing)
	}
	if _, taken := tree[a.FilePath]; taken {
		return badRequest(msgFileExists)
	}
	delete(tree, a.PreviousPath)
	if a.Content == nil {
		tree[a.FilePath] = previous
		return nil
	}
	return p.put(tree, a.FilePath, content, previous.Mode)
}

// put stores content at path, refusing a path that is a directory or lies
// below a file.
func (p *project) put(tree gitobjects.Files, path string, content []byte, mode filemode.FileMode) *refusal {
	for existing := range tree {
		if strings.HasPrefix(existing, path+"/") {
			return badRequest(msgDirectoryExists)
		}
		if strings.HasPrefix(path, existing+"/") {
			return badRequest("invalid path: '%s'", path)
		}
	}
	blob, err := p.WriteBlob(content)
	if err != nil {
		return &refusal{status: http.StatusInternalServerError, message: err.Error()}
	}
	tree[path] = gitobjects.Entry{Mode: mode, Hash: blob}
	return nil
}

func checkPath(path string) *refusal {
	if strings.HasPrefix(path, "/") || path == ".." || strings.HasPrefix(path, "../") ||
		strings.Contains(path, "/../") || strings.HasSuffix(path, "/..") {
		return badRequest(msgTraversal)
	}
	return nil
}

// decodeContent reads an action's content: text as is, or base64.
func decodeContent(a commitAction) ([]byte, error) {
	if a.Content == nil {
		return nil, nil
	}
	if a.Encoding != "base64" {
		return []byte(*a.Content), nil
	}
	content, err := base64.StdEncoding.DecodeString(*a.Content)
	if err != nil {
		return nil, fmt.Errorf("content of %s is not valid base64: %w", a.FilePath, err)
	}
	return content, nil
}

// storeCommit writes the tree and the commit and moves the branch. The
// committer is always the token's user (the documented example response
// shows the API user as committer; Gitaly's UserCommitFiles commits as the
// request's user) and both dates are the server's clock: the API takes
// author_name and author_email ("Specify the commit author's ...",
// https://docs.gitlab.com/api/commits/#create-a-commit-with-multiple-files-and-actions),
// nothing else about
// identity or time (lib/api/commits.rb keeps only branch, commit_message,
// actions, start_branch, start_sha, start_project, author_email,
// author_name, stats and force).
func (s *Server) storeCommit(p *project, body commitBody, user User, tree gitobjects.Files, parent *object.Commit) (*object.Commit, error) {
	treeID, err := p.WriteFiles(tree)
	if err != nil {
		return nil, err
	}
	author := signature{name: user.Name, email: user.Email}
	if body.AuthorName != "" {
		author.name = body.AuthorName
	}
	if body.AuthorEmail != "" {
		author.email = body.AuthorEmail
	}
	var parents []plumbing.Hash
	if parent != nil {
		parents = []plumbing.Hash{parent.Hash}
	}
	id, err := p.writeCommit(treeID, parents, body.CommitMessage, author, signature{name: user.Name, email: user.Email}, s.now())
	if err != nil {
		return nil, err
	}
	if p.empty() {
		// The first branch pushed to an empty project becomes its default.
		p.defaultBranch = body.Branch
	}
	p.branches[body.Branch] = id
	return p.Commit(id)
}
