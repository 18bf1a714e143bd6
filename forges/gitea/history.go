package gitea

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/configbutler/gitops-reverser/forges"
)

var _ forges.HistoryReader = (*Client)(nil)

// historyPageSize is the most commits Gitea lists in one page by default
// (its API.MAX_RESPONSE_ITEMS, 50).
const historyPageSize = 50

// InHistory pages through head's history, newest first, looking for
// commit among its first depth commits ("Get a list of all commits from a
// repository", GET /repos/{owner}/{repo}/commits?sha={head},
// https://gitea.com/api/swagger#/repository/repoGetAllCommits). Gitea has
// no compare answer that tells an ancestor from a diverged commit, so the
// walk is bounded instead. Statistics, verification and file lists are
// turned off: only the ids are read. A head Gitea does not have is false.
// The walk ends at an empty page rather than a short one, so a server that
// serves fewer per page than asked is still read to the end.
func (c *Client) InHistory(ctx context.Context, head, commit string, depth int) (bool, error) {
	if head == commit {
		return true, nil
	}
	op := fmt.Sprintf("list the history of %s", head)
	for page, seen := 1, 0; seen < depth; page++ {
		query := url.Values{"sha": {head}, "page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(historyPageSize)},
			"stat": {"false"}, "verification": {"false"}, "files": {"false"}}
		var commits []struct {
			SHA string `json:"sha"`
		}
		err := c.call(ctx, http.MethodGet, c.repoPath("/commits"), query, nil, &commits)
		if statusOf(err) == http.StatusNotFound {
			return false, nil
		}
		if err != nil {
			return false, classify(op, err)
		}
		for _, listed := range commits {
			if listed.SHA == commit {
				return true, nil
			}
		}
		if len(commits) == 0 {
			return false, nil // the whole history has been read
		}
		seen += len(commits)
	}
	return false, nil
}
