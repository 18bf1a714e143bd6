package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/configbutler/gitops-reverser/forges"
)

// pushRetryAfter is how long a client that was refused the Git protocol
// stays on the API before it tries a push again: a refusal is most likely
// the server's configuration, but may have been a proxy's passing state.
const pushRetryAfter = time.Hour

// pushes is the decision whether a commit goes through the Pusher: every
// commit does, once a Pusher is set, unless the server refused the Git
// protocol within the last pushRetryAfter. Measured on Gitea 1.27 (BenchmarkGiteaCommitPaths, docs/forges.md) a
// push was faster than ChangeFiles at every size, from one file in a
// 10-file repository (0.56 s against 1.25 s) to 2,000 files (0.9 s against
// 50 s), because ChangeFiles works in a temporary clone and runs git
// processes per file.
func (c *Client) pushes() bool {
	return c.pusher != nil && c.now().UnixNano() >= c.pushRefusedUntil.Load()
}

// push makes the chain of commits with the Pusher, in one push. Its errors
// already speak the forges vocabulary (a moved head is
// forges.ErrConflict) and name the branch; this adds the path taken. ok
// is false when the server refused the push itself (see refused): the
// caller commits through ChangeFiles.
func (c *Client) push(ctx context.Context, reqs []forges.CommitRequest) (results []forges.CommitResult, ok bool, err error) {
	results, err = c.pusher.CommitChain(ctx, reqs)
	switch {
	case err == nil && reqs[0].ExpectedHead == "" && reqs[0].BaseHead == "":
		c.awaitNotEmpty(ctx)
		return results, true, nil
	case err == nil:
		return results, true, nil
	case c.refused(err):
		return nil, false, nil
	}
	return nil, true, fmt.Errorf("through git push: %w", err)
}

const (
	// emptyFlagWait bounds how long a first push waits for Gitea to see
	// that the repository has commits now.
	emptyFlagWait = 30 * time.Second
	// emptyFlagPoll spaces the reads of the flag.
	emptyFlagPoll = 50 * time.Millisecond
)

// awaitNotEmpty waits until the API no longer reports the repository
// empty. Gitea clears the flag from a queue after the first push; until it
// does, its API answers as for an empty repository (404 for the branch and
// the files the push made), and a caller reading them back would see none.
// The commit is in either way: past emptyFlagWait such a read fails and is
// retried like any transient answer.
func (c *Client) awaitNotEmpty(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, emptyFlagWait)
	defer cancel()
	for {
		var repo repositoryResponse
		err := c.call(ctx, http.MethodGet, c.repoPath(""), nil, nil, &repo)
		if err == nil && !repo.Empty {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(emptyFlagPoll):
		}
	}
}

// refused reports whether err says the server takes no Git protocol from
// this client at all, rather than anything about the commit or the branch:
// Gitea answers 403 when git over HTTP is disabled (DISABLE_HTTP_GIT), and
// a proxy that passes only the API may answer 401 or 403. It then switches
// the client to the API for pushRetryAfter.
func (c *Client) refused(err error) bool {
	if !errors.Is(err, forges.ErrUnauthorized) && !errors.Is(err, forges.ErrForbidden) {
		return false
	}
	c.pushRefusedUntil.Store(c.now().Add(pushRetryAfter).UnixNano())
	return true
}
