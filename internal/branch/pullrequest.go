package branch

import (
	"fmt"
	"strings"

	"github.com/configbutler/gitops-reverser/forges"
)

// Pull-request mode (issue 25): a worker whose Config.PullRequest is set
// commits to its Key.Branch, the head branch, with the same
// compare-and-swap as direct mode, and keeps one open pull request from it
// into PullRequestSettings.Base. The head branch starts from the base.

// PullRequestSettings turn pull-request mode on for a worker.
type PullRequestSettings struct {
	// Base is the branch the pull request merges into: the GitTarget's
	// spec.branch. The worker never writes it.
	Base string
	// Templates render the pull request's title and body.
	Templates *PullRequestTemplates
}

// PullRequestTemplates are the parsed title and body templates of a pull
// request (GitTarget spec.push.pullRequest). Title and Body are the texts
// (a default's when the spec left one empty); they run on the same
// reflection-free walker as commit messages (template.go), over
// PullRequestData.
type PullRequestTemplates struct {
	Title, Body string
	title, body *messageTemplate
}

// ParsePullRequestTemplates parses a pull request's title and body
// templates; an empty one takes its default (DefaultPullRequestTitle,
// DefaultPullRequestBody). A template that does not parse, or reads a
// field pull requests do not have, is an error naming it, for the
// GitTarget's condition.
func ParsePullRequestTemplates(title, body string) (*PullRequestTemplates, error) {
	if title == "" {
		title = DefaultPullRequestTitle
	}
	if body == "" {
		body = DefaultPullRequestBody
	}
	t := &PullRequestTemplates{Title: title, Body: body}
	var err error
	if t.title, err = parseTemplate("title", title, pullRequestFields()); err != nil {
		return nil, fmt.Errorf("pull request title template: %w", err)
	}
	if t.body, err = parseTemplate("body", body, pullRequestFields()); err != nil {
		return nil, fmt.Errorf("pull request body template: %w", err)
	}
	return t, nil
}

// render is the pull request's title (one line, trimmed) and rendered
// body (without the summary block).
func (t *PullRequestTemplates) render(data PullRequestData) (title, body string, err error) {
	if t == nil || t.title == nil {
		if t, err = ParsePullRequestTemplates("", ""); err != nil {
			return "", "", err
		}
	}
	if title, err = t.title.execute(data, 0); err != nil {
		return "", "", fmt.Errorf("rendering the pull request %w", err)
	}
	if body, err = t.body.execute(data, 0); err != nil {
		return "", "", fmt.Errorf("rendering the pull request %w", err)
	}
	body = strings.TrimSuffix(body, "\n") // the one execute ends every text with
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return "", "", fmt.Errorf("the pull request title rendered empty")
	}
	return title, body, nil
}

// PullRequestInfo is where a worker's pull request stands, for the
// GitTarget's status (OutcomePullRequest).
type PullRequestInfo struct {
	// Head and Base are the branches: the worker's and the settings'.
	Head, Base string
	// Supported is false when the forge has no pull requests (plain Git):
	// the head branch is pushed and nothing else; a human opens the pull
	// request.
	Supported bool
	// Number, URL and State are the pull request's; Number 0 when none is
	// open yet (before the first commit, or after a merge until the next
	// change).
	Number int64
	URL    string
	State  forges.PullRequestState
	// Conflict is true when the base moved, conflicts with the head, and
	// the forge can neither merge the base in nor rebuild the head on it:
	// a human resolves it on the forge; commits go on to the head.
	Conflict bool
	// Note says what the worker last did to the pull request, in words
	// (opened, updated, the base merged in, the head rebuilt on the base).
	Note string
	// Err is the last failure of a pull request request, nil after one
	// went through; commits to the head are not held back by it.
	Err error
}
