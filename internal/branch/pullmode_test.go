package branch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	gh "github.com/google/go-github/v93/github"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/forges"
	forgegithub "github.com/configbutler/gitops-reverser/forges/github"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

// Pull-request mode's executor on real forge parts: the GitHub simulator
// (test/sim/github, each behaviour citing GitHub's documentation), and a
// local Git remote through go-git.

const (
	ghOwner   = "configbutler"
	ghToken   = "ghp_good"
	prHead    = "gitops-reverser/mirror"
	prBase    = "main"
	prOutside = "outside.txt"
)

// prRig is a pull-request worker and the pull request outcomes it emitted.
type prRig struct {
	w        *branch.Worker
	outcomes chan branch.Outcome
	cancel   func()
	done     chan struct{}
}

// startPR starts a pull-request worker on forge, its head prHead into
// prBase, with target at path mirror.
func startPR(t *testing.T, forge forges.Forge, name string) *prRig {
	t.Helper()
	return startPRWith(t, forge, name, nil)
}

// startPRWith is startPR with the config tuned (a fake clock).
func startPRWith(t *testing.T, forge forges.Forge, name string, tune func(*branch.Config)) *prRig {
	t.Helper()
	tmpl, err := branch.ParsePullRequestTemplates("", "")
	require.NoError(t, err)
	r := &prRig{outcomes: make(chan branch.Outcome, 1024), done: make(chan struct{})}
	cfg := branch.Config{Key: branch.Key{ProviderNamespace: "team", Provider: name, Branch: prHead}, Forge: forge,
		CommitWindow: time.Hour, RetryBackoff: 20 * time.Millisecond, Log: testr.New(t),
		PullRequest: &branch.PullRequestSettings{Base: prBase, Templates: tmpl}}
	onOutcome(t, &cfg, branch.OutcomePullRequest, func(o branch.Outcome) { r.outcomes <- o })
	if tune != nil {
		tune(&cfg)
	}
	r.w = branch.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { defer close(r.done); _ = r.w.Run(ctx) }()
	t.Cleanup(r.stop)
	require.NoError(t, r.w.SetTarget(ctx, branch.Target{Key: target, Path: "mirror"}))
	return r
}

// flush waits for the update, longer than flush: a real Gitea on a
// loaded machine takes seconds per request.
func (r *prRig) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, r.w.Flush(ctx, target))
}

func (r *prRig) stop() {
	r.cancel()
	<-r.done
}

// last is the newest pull request outcome since the last call; ok false
// when there was none. The consumer hands outcomes over before it answers
// the flush that followed them, so after a flush none is in flight.
func (r *prRig) last() (o branch.Outcome, ok bool) {
	for {
		select {
		case o = <-r.outcomes:
			ok = true
		default:
			return o, ok
		}
	}
}

// change writes objects and flushes: one update of the head branch.
func (r *prRig) change(t *testing.T, writes ...branch.Write) branch.Outcome {
	t.Helper()
	for _, wr := range writes {
		write(t, r.w, branch.Author{}, wr)
	}
	r.flush(t)
	o, ok := r.last()
	require.True(t, ok, "an update that committed tells the pull request's state")
	return o
}

// rebuild answers a Rebuild as the engine does: the target's replay
// writes every object the cluster has and sweeps the rest. It returns the
// newest pull request outcome: the replay's, or the one that asked for the
// rebuild when the replay found nothing to change.
func (r *prRig) rebuild(t *testing.T, asked branch.Outcome, cluster ...branch.Write) branch.Outcome {
	t.Helper()
	var present []manifest.ObjectID
	for _, wr := range cluster {
		write(t, r.w, branch.Author{}, wr)
		present = append(present, wr.ID)
	}
	require.NoError(t, r.w.Sync(context.Background(), target,
		&branch.Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"}, Present: present}, true))
	r.flush(t)
	if o, ok := r.last(); ok {
		return o
	}
	return asked
}

// ghRepo is a repository on the GitHub simulator with a client on it.
type ghRepo struct {
	sim    *simgithub.Server
	name   string
	client *forgegithub.Client
}

func newGHRepo(t *testing.T, sim *simgithub.Server) *ghRepo {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	require.NoError(t, sim.CreateRepo(ghOwner, name, map[string]string{"README.md": "hello\n", prOutside: "base 1\n"}))
	return &ghRepo{sim: sim, name: name, client: ghClient(t, sim, name)}
}

func ghClient(t *testing.T, sim *simgithub.Server, name string) *forgegithub.Client {
	t.Helper()
	client, err := forgegithub.New(forgegithub.Options{Owner: ghOwner, Repo: name, APIURL: sim.URL(), Token: ghToken,
		ContentPerMinute: 1 << 20, ContentPerHour: 1 << 20})
	require.NoError(t, err)
	return client
}

func startGitHubSim(t *testing.T, opts ...simgithub.Option) *simgithub.Server {
	t.Helper()
	sim := simgithub.Start(opts...)
	t.Cleanup(sim.Close)
	sim.AddToken(ghToken)
	return sim
}

// reviewer is a person on GitHub: a plain go-github client, not the
// client under test.
func (g *ghRepo) reviewer(t *testing.T) *gh.Client {
	t.Helper()
	client, err := gh.NewClient(gh.WithURLs(new(g.sim.URL()+"/"), nil), gh.WithAuthToken(ghToken))
	require.NoError(t, err)
	return client
}

func (g *ghRepo) pulls(t *testing.T, state string) []*gh.PullRequest {
	t.Helper()
	prs, _, err := g.reviewer(t).PullRequests.List(context.Background(), ghOwner, g.name, &gh.PullRequestListOptions{State: state})
	require.NoError(t, err)
	return prs
}

func (g *ghRepo) merge(t *testing.T, number int64) {
	t.Helper()
	_, _, err := g.reviewer(t).PullRequests.Merge(context.Background(), ghOwner, g.name, int(number), "", nil)
	require.NoError(t, err)
}

func (g *ghRepo) file(t *testing.T, branch, path string) string {
	t.Helper()
	content, _ := g.sim.File(ghOwner, g.name, branch, path)
	return content
}

// pullRequestRequests counts the simulator's requests on pulls since from.
func pullRequestRequests(reqs []simgithub.Request) (pulls, other int) {
	for _, r := range reqs {
		if strings.Contains(r.Path, "/pulls") {
			pulls++
		} else {
			other++
		}
	}
	return pulls, other
}

func TestAPullRequestIsOpenedByTheFirstChangeAndUpdatedByTheNextTen(t *testing.T) {
	sim := startGitHubSim(t)
	repo := newGHRepo(t, sim)
	r := startPR(t, repo.client, repo.name)
	baseBefore, err := sim.HeadCommit(ghOwner, repo.name, prBase)
	require.NoError(t, err)

	o := r.change(t, cm("a", "0"))
	info := o.PullRequest
	require.True(t, info.Supported)
	require.NotZero(t, info.Number)
	require.Equal(t, forges.PullRequestOpen, info.State)
	require.Equal(t, prHead, info.Head)
	require.Equal(t, prBase, info.Base)
	require.NoError(t, info.Err)
	require.Equal(t, "base 1\n", repo.file(t, prHead, prOutside), "the head branch started from the base")

	for i := 1; i <= 10; i++ {
		before := len(sim.Requests())
		o = r.change(t, cm("a", fmt.Sprint(i)))
		pulls, other := pullRequestRequests(sim.Requests()[before:])
		require.Equal(t, 1, pulls, "one pull request request per update")
		require.Equal(t, 3, other, "the commit's tree, commit and ref")
		require.Equal(t, info.Number, o.PullRequest.Number)
	}
	before := len(sim.Requests())
	write(t, r.w, branch.Author{}, cm("a", "10"))
	flush(t, r.w)
	_, told := r.last()
	require.False(t, told, "a window that changes nothing makes no commit and no pull request request")
	pulls, _ := pullRequestRequests(sim.Requests()[before:])
	require.Zero(t, pulls)

	open := repo.pulls(t, "open")
	require.Len(t, open, 1, "one pull request")
	require.Equal(t, prHead, open[0].GetHead().GetRef())
	body := open[0].GetBody()
	require.Contains(t, body, "**1 added, 10 changed** (commits: 11)")
	require.Contains(t, body, "mirror/team/configmaps/a.yaml")
	require.Contains(t, body, "<!-- gitops-reverser:summary ")
	require.Equal(t, "Cluster changes to team/mirror", open[0].GetTitle())
	baseAfter, err := sim.HeadCommit(ghOwner, repo.name, prBase)
	require.NoError(t, err)
	require.Equal(t, baseBefore.SHA, baseAfter.SHA, "the base is never written")
}

func TestAHumansCommitOnTheHeadIsKeptAndTheNextCommitLandsOnTop(t *testing.T) {
	sim := startGitHubSim(t)
	repo := newGHRepo(t, sim)
	r := startPR(t, repo.client, repo.name)
	r.change(t, cm("a", "1"))
	human, err := sim.Commit(ghOwner, repo.name, prHead, map[string]string{"mirror/NOTES.md": "reviewed\n"}, "a human's note")
	require.NoError(t, err)

	r.change(t, cm("b", "1"))
	head, err := sim.HeadCommit(ghOwner, repo.name, prHead)
	require.NoError(t, err)
	require.Contains(t, head.Parents, human, "the worker's commit is on top of the human's")
	require.Equal(t, "reviewed\n", repo.file(t, prHead, "mirror/NOTES.md"))
	require.Len(t, repo.pulls(t, "open"), 1)
}

func TestAMergedPullRequestIsFollowedByANewOneFromTheNewBase(t *testing.T) {
	sim := startGitHubSim(t)
	repo := newGHRepo(t, sim)
	r := startPR(t, repo.client, repo.name)
	first := r.change(t, cm("a", "1")).PullRequest.Number
	// Someone else moves the base, outside the mirrored path.
	_, err := sim.Commit(ghOwner, repo.name, prBase, map[string]string{prOutside: "base 2\n"}, "someone else")
	require.NoError(t, err)
	repo.merge(t, first)

	o := r.change(t, cm("b", "1"))
	require.Contains(t, o.PullRequest.Note, "merged")
	require.True(t, o.Rebuild, "a commit landed after the merge: the path is written again from the cluster")
	// A forge that makes merge commits opens the next pull request with the
	// rebuild's fresh commit; one that does not opens it at once, the head
	// carrying the commit made after the merge.

	o = r.rebuild(t, o, cm("a", "1"), cm("b", "1"))
	second := o.PullRequest.Number
	require.NotZero(t, second)
	require.NotEqual(t, first, second, "a new pull request")
	require.Len(t, repo.pulls(t, "open"), 1)
	require.Equal(t, forges.PullRequestOpen, o.PullRequest.State)

	repo.merge(t, second)
	require.Equal(t, "base 2\n", repo.file(t, prBase, prOutside), "the base's content outside the path is never reverted")
	require.Contains(t, repo.file(t, prBase, "mirror/team/configmaps/b.yaml"), `v: "1"`, "after the final merge Git has the cluster")
	require.Contains(t, repo.file(t, prBase, "mirror/team/configmaps/a.yaml"), `v: "1"`)
}

func TestAClosedPullRequestRebuildsAFreshHead(t *testing.T) {
	sim := startGitHubSim(t)
	repo := newGHRepo(t, sim)
	r := startPR(t, repo.client, repo.name)
	first := r.change(t, cm("a", "1")).PullRequest.Number
	_, _, err := repo.reviewer(t).PullRequests.Edit(context.Background(), ghOwner, repo.name, int(first), &gh.PullRequest{State: new("closed")})
	require.NoError(t, err)

	o := r.change(t, cm("b", "1"))
	require.Contains(t, o.PullRequest.Note, "closed")
	require.True(t, o.Rebuild, "a closed pull request's changes are in the cluster and not in the base")
	o = r.rebuild(t, o, cm("a", "1"), cm("b", "1"))
	require.NotEqual(t, first, o.PullRequest.Number)
	open := repo.pulls(t, "open")
	require.Len(t, open, 1)
	require.Contains(t, open[0].GetBody(), "(commits: 1)", "a new pull request starts a new summary")
}

func TestARestartedWorkerContinuesThePullRequestAndItsSummary(t *testing.T) {
	sim := startGitHubSim(t)
	repo := newGHRepo(t, sim)
	r := startPR(t, repo.client, repo.name)
	number := r.change(t, cm("a", "1")).PullRequest.Number
	r.change(t, cm("b", "1"))
	r.stop()

	r = startPR(t, ghClient(t, sim, repo.name), repo.name)
	o := r.change(t, cm("c", "1"))
	require.Equal(t, number, o.PullRequest.Number, "the same pull request")
	open := repo.pulls(t, "open")
	require.Len(t, open, 1)
	require.Contains(t, open[0].GetBody(), "**3 added** (commits: 3)", "the summary read back from the body and continued")
}

func TestAForgeWithoutPullRequestsPushesTheHeadBranchOnly(t *testing.T) {
	_, err := git.CreateRepoWithCommit("pr-gogit", map[string]string{prOutside: "base 1\n"})
	require.NoError(t, err)
	client, err := gogit.New(gogit.Options{URL: git.FileURL("pr-gogit")})
	require.NoError(t, err)
	r := startPR(t, client, "pr-gogit")
	o := r.change(t, cm("a", "1"))
	require.False(t, o.PullRequest.Supported)
	require.Equal(t, prHead, o.PullRequest.Head)
	require.Equal(t, prBase, o.PullRequest.Base)
	out, err := git.ReadFile("pr-gogit", prHead, "mirror/team/configmaps/a.yaml")
	require.NoError(t, err)
	require.Contains(t, out, `v: "1"`)
	main := gitOut(t, "pr-gogit", "rev-parse", "main")
	require.Equal(t, main, gitOut(t, "pr-gogit", "rev-parse", prHead+"^"), "the head branch starts from the base")

	write(t, r.w, branch.Author{}, cm("a", "2"))
	flush(t, r.w)
	_, again := r.last()
	require.False(t, again, "said once")
}

func TestABaseMovedWithoutAConflictLeavesTheHeadAlone(t *testing.T) {
	sim := startGitHubSim(t)
	repo := newGHRepo(t, sim)
	r := startPR(t, repo.client, repo.name)
	r.change(t, cm("a", "1"))
	headBefore, err := sim.HeadCommit(ghOwner, repo.name, prHead)
	require.NoError(t, err)
	_, err = sim.Commit(ghOwner, repo.name, prBase, map[string]string{prOutside: "base 2\n"}, "someone else")
	require.NoError(t, err)

	before := len(sim.Requests())
	o := r.change(t, cm("b", "1"))
	require.False(t, o.Rebuild)
	require.False(t, o.PullRequest.Conflict)
	for _, req := range sim.Requests()[before:] {
		require.NotContains(t, req.Path, "update-branch", "update only on conflict")
	}
	head, err := sim.HeadCommit(ghOwner, repo.name, prHead)
	require.NoError(t, err)
	require.Equal(t, []string{headBefore.SHA}, head.Parents, "the worker's commit on its own head, nothing merged in")
	require.Equal(t, "base 1\n", repo.file(t, prHead, prOutside))
}

// TestABaseThatConflictsIsRebuiltOnGitHub: someone changes a mirrored
// file on the base. GitHub's update-branch refuses the merge (a
// conflict), so the head is rebuilt on the base: a merge commit whose tree
// is the base's with the cluster's state written over it.
//
// The simulator computes mergeability before it answers
// (WithMergeableAtOnce): by default GitHub's first answer after the head
// moved reads mergeable null, and the update's one request comes right
// after its commit (see docs/pull-request-mode.md, what is left).
func TestABaseThatConflictsIsRebuiltOnGitHub(t *testing.T) {
	sim := startGitHubSim(t, simgithub.WithMergeableAtOnce())
	repo := newGHRepo(t, sim)
	r := startPR(t, repo.client, repo.name)
	r.change(t, cm("a", "1"))
	_, err := sim.Commit(ghOwner, repo.name, prBase, map[string]string{
		"mirror/team/configmaps/a.yaml": string(cm("a", "someone else's").YAML), prOutside: "base 2\n"}, "someone else")
	require.NoError(t, err)

	o := r.change(t, cm("b", "1"))
	require.True(t, o.Rebuild, "a conflict GitHub cannot merge: rebuilt")
	number := o.PullRequest.Number
	o = r.rebuild(t, o, cm("a", "1"), cm("b", "1"))
	require.Equal(t, number, o.PullRequest.Number, "the same pull request")
	require.False(t, o.PullRequest.Conflict)
	base, err := sim.HeadCommit(ghOwner, repo.name, prBase)
	require.NoError(t, err)
	head, err := sim.HeadCommit(ghOwner, repo.name, prHead)
	require.NoError(t, err)
	require.Contains(t, head.Parents, base.SHA, "the base is a parent of the rebuilt head: a fast-forward, no force-push")
	require.Equal(t, "base 2\n", repo.file(t, prHead, prOutside))
	require.Contains(t, repo.file(t, prHead, "mirror/team/configmaps/a.yaml"), `v: "1"`, "the cluster's state")
	open := repo.pulls(t, "open")
	require.Len(t, open, 1)
	require.Contains(t, open[0].GetBody(), "rebuilt on the base", "the pull request says what happened")
	repo.merge(t, number)
	require.Equal(t, "base 2\n", repo.file(t, prBase, prOutside))
}

// TestAConflictSeenAfterAQuietSpellRebuildsOnGitHub: GitHub answers
// mergeable null right after a push (the simulator's default schedule), so
// the update's own request cannot see the conflict; once the branch has
// been quiet for a minute the worker reads the pull request once more, and
// that answer knows.
func TestAConflictSeenAfterAQuietSpellRebuildsOnGitHub(t *testing.T) {
	sim := startGitHubSim(t)
	repo := newGHRepo(t, sim)
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := startPRWith(t, repo.client, repo.name, func(c *branch.Config) { c.Clock = clock })
	r.change(t, cm("a", "1"))
	_, err := sim.Commit(ghOwner, repo.name, prBase, map[string]string{
		"mirror/team/configmaps/a.yaml": string(cm("a", "someone else's").YAML)}, "someone else")
	require.NoError(t, err)
	o := r.change(t, cm("b", "1"))
	require.False(t, o.Rebuild, "GitHub does not know yet")

	// The quiet minute passes on the fake clock, stepped on a ticker until
	// the worker's timer (set when its loop came round) has fired.
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case o = <-r.outcomes:
			require.True(t, o.Rebuild, "the conflict seen on the quiet read: rebuilt")
			require.Contains(t, o.PullRequest.Note, "rebuilt")
			return
		case <-ticker.C:
			clock.Step(10 * time.Second)
		case <-deadline:
			t.Fatal("the pull request was never read again")
		}
	}
}

// TestThePullRequestNamesOnlyTheActorsAttributionNamed: a change nobody
// was named for is the committer's, and the committer is not an actor;
// a person attribution named is.
func TestThePullRequestNamesOnlyTheActorsAttributionNamed(t *testing.T) {
	sim := startGitHubSim(t)
	repo := newGHRepo(t, sim)
	r := startPRWith(t, repo.client, repo.name, func(c *branch.Config) {
		c.Committer = branch.Author{Name: "GitOps Reverser", Email: "bot@example.com"}
	})
	r.change(t, cm("a", "0"))
	open := repo.pulls(t, "open")
	require.Len(t, open, 1)
	require.NotContains(t, open[0].GetBody(), "Changed by", "the committer is not an actor")

	write(t, r.w, branch.Author{Name: "alice", Email: "alice@example.com", Kind: branch.AuthorUser}, cm("a", "1"))
	r.flush(t)
	open = repo.pulls(t, "open")
	require.Contains(t, open[0].GetBody(), "Changed by: alice")
	require.Contains(t, open[0].GetBody(), `"actors":["alice"]`, "alice alone")
}
