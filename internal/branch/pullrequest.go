package branch

import (
	"fmt"
	"text/template/parse"

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
// request (GitTarget spec.push.pullRequest).
type PullRequestTemplates struct {
	Title, Body string
}

// ParsePullRequestTemplates parses a pull request's title and body
// templates; an empty one takes its default. A template that does not
// parse is an error naming it, for the GitTarget's condition.
func ParsePullRequestTemplates(title, body string) (*PullRequestTemplates, error) {
	for name, text := range map[string]string{"title": title, "body": body} {
		if _, err := parse.Parse(name, text, "", "", map[string]any{}); err != nil {
			return nil, fmt.Errorf("pull request %s template: %w", name, err)
		}
	}
	return &PullRequestTemplates{Title: title, Body: body}, nil
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
