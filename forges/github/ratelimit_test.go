package github_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/gitfile"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

func withClock(clock *simgithub.Clock) func(*forgegithub.Options) {
	return func(o *forgegithub.Options) { o.Now = clock.Now }
}

// limitedRepo starts a simulator allowing contentPerMinute content-creating
// requests a minute and makes one commit ("one.yaml") with a client on the
// simulator's clock.
func limitedRepo(t *testing.T, contentPerMinute int, opts ...func(*forgegithub.Options)) (*simgithub.Clock, *simgithub.Server, *forgegithub.Client, string, forges.CommitResult) {
	t.Helper()
	clock := simgithub.NewClock(time.Now())
	sim := startSim(t, simgithub.WithClock(clock.Now), simgithub.WithContentLimit(contentPerMinute, 500))
	repo, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"}, append([]func(*forgegithub.Options){withClock(clock)}, opts...)...)
	first, err := client.Commit(context.Background(), commitRequest("main", mainHead(t, client), gitfile.Change{Path: "one.yaml", Content: []byte("1\n")}))
	require.NoError(t, err)
	return clock, sim, client, repo, first
}

func TestSecondaryRateLimitIsWaitedOutAndNothingIsLost(t *testing.T) {
	// Room for exactly one commit (tree, commit, ref update) a minute.
	clock, sim, client, repo, first := limitedRepo(t, 3)
	ctx := context.Background()
	var err error

	clock.Advance(15 * time.Second)
	second := commitRequest("main", first.Commit, gitfile.Change{Path: "two.yaml", Content: []byte("2\n")})
	_, err = client.Commit(ctx, second)
	require.ErrorIs(t, err, forges.ErrRateLimited)
	require.Equal(t, 45*time.Second, forges.RetryAfter(err), "GitHub's retry-after: the minute of the first commit's writes")
	current, err := client.Head(ctx, "main")
	require.NoError(t, err, "reads go on during a secondary limit on content creation")
	require.Equal(t, first.Commit, current, "the refused commit changed nothing")

	made := record(t, sim, func() {
		_, err = client.Commit(ctx, second)
	})
	require.ErrorIs(t, err, forges.ErrRateLimited)
	require.Empty(t, made, "nothing is sent before the wait is over")

	clock.Advance(forges.RetryAfter(err))
	result, err := client.Commit(ctx, second)
	require.NoError(t, err, "the retry after the wait lands")
	content, ok := sim.File(owner, repo, "main", "two.yaml")
	require.True(t, ok)
	require.Equal(t, "2\n", content)
	landed, err := sim.HeadCommit(owner, repo, "main")
	require.NoError(t, err)
	require.Equal(t, result.Commit, landed.SHA)
	require.Equal(t, []string{first.Commit}, landed.Parents)
}

func TestPrimaryBudgetIsReportedAndAnExhaustedOneWaitsForReset(t *testing.T) {
	clock := simgithub.NewClock(time.Now().Truncate(time.Second))
	sim := startSim(t, simgithub.WithClock(clock.Now), simgithub.WithPrimaryLimit(3, http.StatusForbidden))
	_, client := tokenRepo(t, sim, map[string]string{"a.yaml": "a: 1\n"}, withClock(clock))
	ctx := context.Background()
	_, known := client.Budget()
	require.False(t, known, "no response has reported a budget yet")

	_, err := client.Head(ctx, "main")
	require.NoError(t, err)
	budget, known := client.Budget()
	require.True(t, known)
	reset := clock.Now().Add(time.Hour)
	require.Equal(t, forges.Budget{Limit: 3, Remaining: 2, Reset: reset}, budget)

	for range 2 {
		_, err = client.Head(ctx, "main")
		require.NoError(t, err)
	}
	budget, _ = client.Budget()
	require.Equal(t, 0, budget.Remaining)
	clock.Advance(10 * time.Minute)
	made := record(t, sim, func() { _, err = client.Head(ctx, "main") })
	require.ErrorIs(t, err, forges.ErrRateLimited)
	require.Equal(t, 50*time.Minute, forges.RetryAfter(err), "until x-ratelimit-reset")
	require.Empty(t, made, "an exhausted budget is not spent further")

	clock.Advance(forges.RetryAfter(err))
	_, err = client.Head(ctx, "main")
	require.NoError(t, err, "the budget was reset")
}

func TestPrimaryLimitAnsweredByGitHubIsRateLimited(t *testing.T) {
	clock := simgithub.NewClock(time.Now().Truncate(time.Second))
	sim := startSim(t, simgithub.WithClock(clock.Now), simgithub.WithPrimaryLimit(1, http.StatusTooManyRequests))
	repo := repoName(t, "r")
	require.NoError(t, sim.CreateRepo(owner, repo, map[string]string{"a.yaml": "a: 1\n"}))
	// Two clients share the budget of one token; the second learns that it
	// is exhausted from GitHub's 429.
	_, err := newTokenClient(t, sim, repo, goodToken, withClock(clock)).Head(context.Background(), "main")
	require.NoError(t, err)
	_, err = newTokenClient(t, sim, repo, goodToken, withClock(clock)).Head(context.Background(), "main")
	require.ErrorIs(t, err, forges.ErrRateLimited)
	require.Equal(t, time.Hour, forges.RetryAfter(err))
}

func TestTheClientPacesItselfUnderTheSecondaryLimitAndSendsNothingEarly(t *testing.T) {
	clock, sim, client, _, first := limitedRepo(t, 3, func(o *forgegithub.Options) {
		o.ContentPerMinute = 3 // the same limit the simulator enforces
	})
	ctx := context.Background()
	var err error
	budget, known := client.Budget()
	require.True(t, known)
	require.Equal(t, 0, budget.Remaining, "the content budget is the tightest and it is spent")

	clock.Advance(15 * time.Second)
	second := commitRequest("main", first.Commit, gitfile.Change{Path: "two.yaml", Content: []byte("2\n")})
	made := record(t, sim, func() { _, err = client.Commit(ctx, second) })
	require.ErrorIs(t, err, forges.ErrRateLimited)
	require.Equal(t, 45*time.Second, forges.RetryAfter(err), "until the first commit's requests leave the minute")
	require.Empty(t, made, "the commit waits without GitHub having to refuse it")

	clock.Advance(forges.RetryAfter(err))
	_, err = client.Commit(ctx, second)
	require.NoError(t, err)
}

func TestARefUpdateHeldBackIsSentAloneOnRetry(t *testing.T) {
	// Room for a commit and the tree and commit of a second, not its ref.
	clock, sim, client, repo, first := limitedRepo(t, 5)
	ctx := context.Background()
	var err error
	second := commitRequest("main", first.Commit, gitfile.Change{Path: "two.yaml", Content: []byte("2\n")})
	_, err = client.Commit(ctx, second)
	require.ErrorIs(t, err, forges.ErrRateLimited, "GitHub refuses the ref update")

	clock.Advance(forges.RetryAfter(err))
	second.Committer.When = second.Committer.When.Add(time.Minute) // a retry is built later
	var result forges.CommitResult
	made := record(t, sim, func() { result, err = client.Commit(ctx, second) })
	require.NoError(t, err)
	require.Equal(t, []string{"PATCH git/refs/heads/main"}, made, "the tree and commit made before are reused")
	landed, err := sim.HeadCommit(owner, repo, "main")
	require.NoError(t, err)
	require.Equal(t, result.Commit, landed.SHA)
}

func TestClientsSharingAPacerCountTogether(t *testing.T) {
	// Two workers (two branches) committing for one token: GitHub counts
	// their content-creating requests together, and so does the pacer.
	pacer := forgegithub.NewContentPacer(nil, 3, 500)
	shared := func(o *forgegithub.Options) { o.Pacer = pacer }
	clock, sim, _, repo, _ := limitedRepo(t, 80, shared) // its first commit spends 3
	second := newTokenClient(t, sim, repo, goodToken, withClock(clock), shared)
	var err error
	made := record(t, sim, func() {
		_, err = second.Commit(context.Background(), commitRequest("other", "", gitfile.Change{Path: "x.yaml", Content: []byte("x\n")}))
	})
	require.ErrorIs(t, err, forges.ErrRateLimited, "the first client's commit spent the shared minute")
	require.Empty(t, made, "nothing is sent")
}
