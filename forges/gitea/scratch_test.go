package gitea

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/configbutler/gitops-reverser/forges/forgetest"
	"github.com/stretchr/testify/require"
)

// cutScratchDeletion stands for a connection cut after ChangeFiles and the
// branch update: the deletion of the scratch branch never reaches Gitea.
type cutScratchDeletion struct {
	next http.RoundTripper
	cut  atomic.Bool
}

func (c *cutScratchDeletion) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.cut.Load() && req.Method == http.MethodDelete && strings.Contains(req.URL.Path, "/branches/"+scratchBranchPrefix) {
		return nil, errors.New("connection reset by peer")
	}
	return c.next.RoundTrip(req)
}

// TestAStaleScratchBranchIsDeletedByALaterCommit leaves a scratch branch
// behind the way a cut connection does, and checks that a commit once it
// is stale deletes it, and with it the leftovers of an earlier release,
// while a fresh scratch branch (another writer's commit in flight) and
// branches that only look alike stay.
func TestAStaleScratchBranchIsDeletedByALaterCommit(t *testing.T) {
	t.Parallel()
	repo := createRepo(t, "stale-scratch", map[string]string{"a.yaml": "a: 1\n"})
	start := time.Now()
	var elapsed atomic.Int64
	transport := &cutScratchDeletion{next: http.DefaultTransport}
	client, err := New(Options{BaseURL: server.URL(), Owner: server.AdminUser(), Repo: repo, Token: server.Token(),
		HTTPClient: &http.Client{Transport: transport, Timeout: time.Minute},
		Now:        func() time.Time { return start.Add(time.Duration(elapsed.Load())) }})
	require.NoError(t, err)
	ctx := testContext(t)

	transport.cut.Store(true)
	res, err := client.Commit(ctx, commitRequest(sdkHead(t, repo, "main"), "cut\n", forgetest.Update("a.yaml", "a: 1\n", "a: 2\n")))
	require.NoError(t, err, "the branch moved; only the scratch branch's deletion was lost")
	transport.cut.Store(false)
	left := branches(t, repo)
	require.Len(t, left, 2, "the cut left the scratch branch: %v", left)
	require.True(t, strings.HasPrefix(left[0], scratchBranchPrefix), "%v", left)

	elapsed.Store(int64(staleScratchAge + time.Minute))
	now := start.Add(staleScratchAge + time.Minute)
	inFlight := scratchBranchPrefix + strconv.FormatInt(now.Add(-time.Minute).Unix(), 10) + "-00112233aabbccdd"
	for _, name := range []string{inFlight, scratchBranchPrefix + "0123456789abcdef", scratchBranchPrefix + "notes"} {
		_, _, err := server.Client().CreateBranch(server.AdminUser(), repo, gitea.CreateBranchOption{BranchName: name, OldBranchName: "main"})
		require.NoError(t, err)
	}

	_, err = client.Commit(ctx, commitRequest(res.Commit, "later\n", forgetest.Update("a.yaml", "a: 2\n", "a: 3\n")))
	require.NoError(t, err)
	require.Equal(t, []string{inFlight, scratchBranchPrefix + "notes", "main"}, branches(t, repo),
		"the stale scratch branches are gone: the one the cut left and the earlier release's (its commit is older "+
			"than the age); a fresh one and a name that only shares the prefix stay")
}
