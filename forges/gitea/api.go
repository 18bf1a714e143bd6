package gitea

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxErrorBodyBytes bounds how much of an error response is read: Gitea's
// error bodies are one short JSON message.
const maxErrorBodyBytes = 64 << 10

// APIError is an answer of the Gitea API outside 2xx. It is wrapped in
// the forges.Error the client returns, so callers can still read the
// status and Gitea's message with errors.As.
type APIError struct {
	Method string
	// Path is the API path below /api/v1, without the query.
	Path       string
	StatusCode int
	// Message is Gitea's "message" field, or the body when it is not
	// Gitea's JSON error.
	Message string
	// RetryAfter is the wait the Retry-After header asked for.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("gitea %s %s: HTTP %d: %s", e.Method, e.Path, e.StatusCode, e.Message)
}

// statusOf returns the HTTP status of a Gitea API error in err, 0 for
// anything else (a network failure).
func statusOf(err error) int {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

// call sends one API request with a JSON body (when body is not nil) and
// decodes a JSON answer into out (when out is not nil). An answer outside
// 2xx is an *APIError; a failure to get any answer is returned as is.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	target := c.apiURL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var payload io.Reader
	if body != nil {
		encoded, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encoding the request to %s %s: %w", method, path, err)
		}
		payload = bytes.NewReader(encoded)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, payload)
	if err != nil {
		return fmt.Errorf("building the request to %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "token "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("gitea %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readAPIError(resp, method, path)
	}
	if out == nil {
		// Drain so the connection is reused.
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("gitea %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

func readAPIError(resp *http.Response, method, path string) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	message := strings.TrimSpace(string(raw))
	var giteaError struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &giteaError) == nil && giteaError.Message != "" {
		message = giteaError.Message
	}
	if message == "" {
		message = http.StatusText(resp.StatusCode)
	}
	return &APIError{
		Method:     method,
		Path:       path,
		StatusCode: resp.StatusCode,
		Message:    message,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
}

// parseRetryAfter reads either form of Retry-After: delay seconds or an
// HTTP date.
func parseRetryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if seconds, err := strconv.Atoi(value); err == nil {
		return max(time.Duration(seconds)*time.Second, 0)
	}
	if at, err := http.ParseTime(value); err == nil {
		return max(at.Sub(now), 0)
	}
	return 0
}

// repoPath is the API path of the repository, or of something below it
// when suffix is set ("/branches/main").
func (c *Client) repoPath(suffix string) string {
	return "/repos/" + url.PathEscape(c.owner) + "/" + url.PathEscape(c.repo) + suffix
}

// escapeRef escapes a branch name for a URL path, keeping the slashes that
// separate its segments ("feature/x"), which Gitea's branch routes accept.
func escapeRef(name string) string {
	segments := strings.Split(name, "/")
	for i, segment := range segments {
		segments[i] = url.PathEscape(segment)
	}
	return strings.Join(segments, "/")
}

// The wire types below carry only the fields this client reads or sends.

type repositoryResponse struct {
	Empty         bool   `json:"empty"`
	DefaultBranch string `json:"default_branch"`
	Archived      bool   `json:"archived"`
	Mirror        bool   `json:"mirror"`
	Permissions   *struct {
		Push bool `json:"push"`
	} `json:"permissions"`
}

type branchResponse struct {
	Name   string `json:"name"`
	Commit struct {
		ID string `json:"id"`
	} `json:"commit"`
}

// branchListEntry is one branch of GET /repos/{owner}/{repo}/branches.
type branchListEntry struct {
	Name   string `json:"name"`
	Commit struct {
		Timestamp time.Time `json:"timestamp"`
	} `json:"commit"`
}

type treeResponse struct {
	Entries []struct {
		Path string `json:"path"`
		Mode string `json:"mode"`
		Type string `json:"type"`
		SHA  string `json:"sha"`
	} `json:"tree"`
	Truncated bool `json:"truncated"`
}

type blobResponse struct {
	// Content is absent for blobs over the server's API blob limit
	// (10 MiB by default).
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
	Size     int64  `json:"size"`
}

type identity struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

type commitDates struct {
	// Zero dates are left out: Gitea then stamps the current time.
	Author    time.Time `json:"author,omitzero"`
	Committer time.Time `json:"committer,omitzero"`
}

type fileOperation struct {
	// Operation is create, update or delete.
	Operation string `json:"operation"`
	Path      string `json:"path"`
	// ContentBase64 is the new content of a create or update.
	ContentBase64 string `json:"content,omitempty"`
	// SHA is the blob id the update or delete replaces: Gitea refuses the
	// operation when the file no longer has it.
	SHA string `json:"sha,omitempty"`
}

type changeFilesRequest struct {
	// Branch is the base the commit is made on.
	Branch string `json:"branch"`
	// NewBranch, when set, receives the commit instead of Branch and must
	// not exist yet.
	NewBranch string          `json:"new_branch,omitempty"`
	Message   string          `json:"message"`
	Author    identity        `json:"author"`
	Committer identity        `json:"committer"`
	Dates     commitDates     `json:"dates"`
	Files     []fileOperation `json:"files"`
}

type changeFilesResponse struct {
	Commit *struct {
		SHA     string `json:"sha"`
		Parents []struct {
			SHA string `json:"sha"`
		} `json:"parents"`
	} `json:"commit"`
}

type createBranchRequest struct {
	NewBranchName string `json:"new_branch_name"`
	// OldRefName is the branch, tag or commit the branch starts at.
	OldRefName string `json:"old_ref_name"`
}

type updateBranchRequest struct {
	NewCommitID string `json:"new_commit_id"`
	// OldCommitID makes the update a compare-and-swap.
	OldCommitID string `json:"old_commit_id"`
}
