package github

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// Documentation URLs the simulator cites, in responses (documentation_url,
// as GitHub does) and in comments next to the behaviour they describe.
const (
	docRefs        = "https://docs.github.com/rest/git/refs"
	docTrees       = "https://docs.github.com/rest/git/trees"
	docBlobs       = "https://docs.github.com/rest/git/blobs"
	docCommits     = "https://docs.github.com/rest/git/commits"
	docContents    = "https://docs.github.com/rest/repos/contents#create-or-update-file-contents"
	docRepos       = "https://docs.github.com/rest/repos/repos#get-a-repository"
	docGitDatabase = "https://docs.github.com/rest/guides/using-the-rest-api-to-interact-with-your-git-database"
	docAuth        = "https://docs.github.com/rest/authentication/authenticating-to-the-rest-api"
	docJWT         = "https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app"
	docAppToken    = "https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-an-installation-access-token-for-a-github-app"
	// docPrimaryLimit and docSecondaryLimit end the way GitHub's own error
	// bodies do; clients (go-github's CheckResponse) recognise a secondary
	// limit by the "secondary-rate-limits" suffix.
	docPrimaryLimit   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
	docSecondaryLimit = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

// errorBody is GitHub's client error shape: a message and a link to the
// documentation (https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api).
type errorBody struct {
	Message          string `json:"message"`
	DocumentationURL string `json:"documentation_url"`
	Status           string `json:"status,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func writeError(w http.ResponseWriter, status int, message, documentationURL string) {
	writeJSON(w, status, errorBody{Message: message, DocumentationURL: documentationURL})
}

func notFound(w http.ResponseWriter, documentationURL string) {
	writeError(w, http.StatusNotFound, "Not Found", documentationURL)
}

// emptyRepository is the Git Database API's answer on a repository without
// commits: "The REST API will return a 409 Conflict if the Git repository is
// empty or unavailable" (docGitDatabase).
func emptyRepository(w http.ResponseWriter, documentationURL string) {
	writeError(w, http.StatusConflict, "Git Repository is empty.", documentationURL)
}

func validationFailed(w http.ResponseWriter, message, documentationURL string) {
	writeError(w, http.StatusUnprocessableEntity, message, documentationURL)
}

// decodeBody reads a JSON request body, answering 400 "Problems parsing
// JSON" like GitHub when it does not parse.
func decodeBody(w http.ResponseWriter, r *http.Request, into any) bool {
	if err := json.NewDecoder(r.Body).Decode(into); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON", "https://docs.github.com/rest")
		return false
	}
	return true
}

// identityJSON is a Git identity in requests and responses; date is ISO
// 8601 (docCommits: "Timestamps are in ISO 8601 format").
type identityJSON struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date,omitempty"`
}

func identityOf(sig object.Signature) identityJSON {
	return identityJSON{Name: sig.Name, Email: sig.Email, Date: sig.When.UTC().Format(time.RFC3339)}
}

type shaURL struct {
	SHA string `json:"sha"`
	URL string `json:"url"`
}

type parentJSON struct {
	SHA     string `json:"sha"`
	URL     string `json:"url"`
	HTMLURL string `json:"html_url"`
}

// verificationJSON is the signature verification object of a commit
// (docCommits, "Signature verification object"). The simulator verifies no
// signature: a signed commit reports reason "unknown_key" with the signature
// and the payload that was signed, so tests can check what a signer saw.
type verificationJSON struct {
	Verified  bool    `json:"verified"`
	Reason    string  `json:"reason"`
	Signature *string `json:"signature"`
	Payload   *string `json:"payload"`
}

type commitJSON struct {
	SHA          string           `json:"sha"`
	NodeID       string           `json:"node_id"`
	URL          string           `json:"url"`
	HTMLURL      string           `json:"html_url"`
	Author       identityJSON     `json:"author"`
	Committer    identityJSON     `json:"committer"`
	Tree         shaURL           `json:"tree"`
	Message      string           `json:"message"`
	Parents      []parentJSON     `json:"parents"`
	Verification verificationJSON `json:"verification"`
}

type refJSON struct {
	Ref    string `json:"ref"`
	NodeID string `json:"node_id"`
	URL    string `json:"url"`
	Object struct {
		Type string `json:"type"`
		SHA  string `json:"sha"`
		URL  string `json:"url"`
	} `json:"object"`
}

type treeEntryJSON struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
	Size *int64 `json:"size,omitempty"`
	URL  string `json:"url"`
}

type treeJSON struct {
	SHA       string          `json:"sha"`
	URL       string          `json:"url"`
	Tree      []treeEntryJSON `json:"tree"`
	Truncated bool            `json:"truncated"`
}

type blobJSON struct {
	SHA      string `json:"sha"`
	NodeID   string `json:"node_id"`
	Size     int    `json:"size"`
	URL      string `json:"url"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

type ownerJSON struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

type repositoryJSON struct {
	ID            int64     `json:"id"`
	NodeID        string    `json:"node_id"`
	Name          string    `json:"name"`
	FullName      string    `json:"full_name"`
	Owner         ownerJSON `json:"owner"`
	Private       bool      `json:"private"`
	HTMLURL       string    `json:"html_url"`
	URL           string    `json:"url"`
	DefaultBranch string    `json:"default_branch"`
	Size          int       `json:"size"`
}
