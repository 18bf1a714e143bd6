package gitlab

import (
	"context"
	"fmt"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/configbutler/gitops-reverser/forges"
)

var _ forges.HistoryReader = (*Client)(nil)

// InHistory asks GitLab for the merge base of the two commits, one request
// whatever the distance (https://docs.gitlab.com/api/repositories/#merge-base):
// commit is in head's history exactly when it is their merge base. GitLab
// answers 400 "Could not find ref" for a commit it does not have and 404
// when the histories share nothing; both are false. depth is not needed.
func (c *Client) InHistory(ctx context.Context, head, commit string, _ int) (bool, error) {
	if head == commit {
		return true, nil
	}
	refs := []string{commit, head}
	base, resp, err := c.api.Repositories.MergeBase(c.project, &gl.MergeBaseOptions{Ref: &refs}, gl.WithContext(ctx))
	if err != nil {
		err = classify(fmt.Sprintf("read the merge base of %s and %s", commit, head), resp, err)
		if forges.KindOf(err) == forges.KindNotFound {
			return false, nil
		}
		return false, err
	}
	return base.ID == commit, nil
}
