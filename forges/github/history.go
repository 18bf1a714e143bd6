package github

import (
	"context"
	"fmt"

	"github.com/google/go-github/v93/github"

	"github.com/configbutler/gitops-reverser/forges"
)

var _ forges.HistoryReader = (*Client)(nil)

// InHistory asks GitHub to compare the two commits, one request whatever
// the distance ("Compare two commits",
// https://docs.github.com/rest/commits/commits#compare-two-commits): status
// "identical" or "ahead" means head is commit or descends from it;
// "behind" and "diverged" mean it does not. GitHub answers 404 for a
// commit it does not know and for two histories with no common ancestor.
// depth is not needed. One commit per page keeps the answer small: the
// status does not depend on the listing.
func (c *Client) InHistory(ctx context.Context, head, commit string, _ int) (bool, error) {
	if head == commit {
		return true, nil
	}
	comparison, _, err := c.api.Repositories.CompareCommits(ctx, c.owner, c.repo, commit, head, &github.ListOptions{PerPage: 1})
	if err != nil {
		err = c.classify(fmt.Sprintf("compare %s with %s", commit, head), err)
		if forges.KindOf(err) == forges.KindNotFound {
			return false, nil
		}
		return false, err
	}
	switch comparison.GetStatus() {
	case "identical", "ahead":
		return true, nil
	}
	return false, nil
}
