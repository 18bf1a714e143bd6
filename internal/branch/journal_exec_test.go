package branch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/encryption"
	"github.com/configbutler/gitops-reverser/internal/redisstore"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// redisJournal is a branch journal and its claims on a real redis-server
// of the test's own.
type redisJournal struct {
	server *harness.Redis
	// journal is what workers journal into: the Redis one, or a wrapper.
	journal branch.Journal
	claims  *redisstore.Claims
	client  *goredis.Client
}

func startJournal(t testing.TB) *redisJournal {
	t.Helper()
	server, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	client := goredis.NewClient(&goredis.Options{Addr: server.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	return &redisJournal{server: server, journal: &redisstore.Journal{Client: client, Prefix: "test:", CursorTTL: time.Minute},
		claims: &redisstore.Claims{Client: client, Prefix: "test:"}, client: client}
}

// branchOf is the name the worker of repo journals under (Key.String).
func branchOf(repo string) string { return "team/" + repo + "@main" }

// claim makes token the owner of repo's branch, taking it from whoever
// held it, as a new owner does once the old one's claim ran out.
func (r *redisJournal) claim(t testing.TB, repo, token string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, r.client.Del(ctx, "test:claim:"+branchOf(repo)).Err())
	got, err := r.claims.Acquire(ctx, branchOf(repo), token, time.Minute)
	require.NoError(t, err)
	require.True(t, got)
}

func (r *redisJournal) entries(t testing.TB, repo string) int {
	t.Helper()
	entries, err := r.journal.Read(context.Background(), branchOf(repo))
	require.NoError(t, err)
	return len(entries)
}

var journalKey = make([]byte, 32)

// journaledBy configures a worker to journal into j under token.
func journaledBy(t testing.TB, j branch.Journal, token string) func(*branch.Config) {
	return func(c *branch.Config) {
		sealer, err := branch.NewAEADSealer(journalKey)
		require.NoError(t, err)
		c.Journal, c.ClaimToken, c.JournalSealer = j, token, sealer
	}
}

// countingJournal counts the appends that reach Redis and, for each that
// stores cursors, how many entries the journal had taken with it.
type countingJournal struct {
	branch.Journal
	mu      sync.Mutex
	appends int
	entries int
	cursors []cursorAppend
}

type cursorAppend struct {
	values  map[string]string
	entries int
}

func (c *countingJournal) Append(ctx context.Context, branchName, token string, entries [][]byte, cursors map[string]string) ([]string, error) {
	ids, err := c.Journal.Append(ctx, branchName, token, entries, cursors)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.appends++
	c.entries += len(ids)
	if err == nil && len(cursors) > 0 {
		values := make(map[string]string, len(cursors))
		for k, v := range cursors {
			values[k] = v
		}
		c.cursors = append(c.cursors, cursorAppend{values: values, entries: c.entries})
	}
	return ids, err
}

func (c *countingJournal) counts() (appends, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appends, c.entries
}

// running is a worker started by hand, so a test can kill it and read
// what Run returned.
type running struct {
	w      *branch.Worker
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// runWorker starts a worker on an existing repository; the test's end
// stops it as the operator does.
// The worker writes the test's target at "mirror", or each of targets
// when given.
func runWorker(t *testing.T, repo string, forge func(forges.Forge) forges.Forge, tune func(*branch.Config),
	targets ...branch.Target,
) *running {
	t.Helper()
	client, err := gogit.New(gogit.Options{URL: git.FileURL(repo)})
	require.NoError(t, err)
	var f forges.Forge = client
	if forge != nil {
		f = forge(client)
	}
	cfg := branch.Config{Key: branch.Key{ProviderNamespace: "team", Provider: repo, Branch: "main"}, Forge: f,
		CommitWindow: time.Hour, RetryBackoff: 20 * time.Millisecond, Log: testr.New(t)}
	if tune != nil {
		tune(&cfg)
	}
	r := &running{w: branch.New(cfg), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { defer close(r.done); r.err = r.w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	if len(targets) == 0 {
		targets = []branch.Target{{Key: target, Path: "mirror"}}
	}
	for _, tg := range targets {
		require.NoError(t, r.w.SetTarget(ctx, tg))
	}
	return r
}

// kill ends the worker as a crash would: it commits nothing more.
func (r *running) kill() {
	r.w.Discard()
	r.cancel()
	<-r.done
}

// trees is the branch's history as author, subject and tree per commit:
// two histories with the same trees wrote the same files in each commit.
func trees(t *testing.T, repo string) string {
	t.Helper()
	out, err := git.Git(repo, "log", "--format=%an|%s|%T", "main")
	require.NoError(t, err)
	return out
}

// authoredWrites are n writes by two authors taking turns every five,
// several versions of each of seven objects.
func authoredWrites(n int) []func(*branch.Worker) error {
	out := make([]func(*branch.Worker) error, n)
	for i := range out {
		author := branch.Author{Name: "Alice", Email: "alice@example.com", Kind: branch.AuthorUser}
		if i/5%2 == 1 {
			author = branch.Author{Name: "Bob", Email: "bob@example.com", Kind: branch.AuthorUser}
		}
		wr := cm(fmt.Sprintf("o%d", i%7), fmt.Sprint(i))
		out[i] = func(w *branch.Worker) error { return w.Write(context.Background(), target, author, wr) }
	}
	return out
}

func writeAll(t *testing.T, w *branch.Worker, writes []func(*branch.Worker) error) {
	t.Helper()
	for _, wr := range writes {
		require.NoError(t, wr(w))
	}
}

// reference commits writes with a worker without a journal, on repo.
func reference(t *testing.T, repo string, writes []func(*branch.Worker) error) {
	t.Helper()
	w := newWorker(t, repo, nil, nil)
	writeAll(t, w, writes)
	flush(t, w)
}

// ownedRepo creates repo and starts a worker journaling into r under
// token, which holds the branch's claim.
func (r *redisJournal) ownedRepo(t *testing.T, repo, token string, forge func(forges.Forge) forges.Forge) *running {
	t.Helper()
	_, err := git.CreateBareRepo(repo)
	require.NoError(t, err)
	r.claim(t, repo, token)
	return runWorker(t, repo, forge, journaledBy(t, r.journal, token))
}

func TestAWorkerWithAJournalCommitsAsOneWithoutAndEmptiesIt(t *testing.T) {
	r := startJournal(t)
	writes := authoredWrites(20)
	reference(t, "unjournaled", writes)
	journaled := r.ownedRepo(t, "journaled", "replica-a", nil)
	writeAll(t, journaled.w, writes)
	flush(t, journaled.w)

	require.Equal(t, trees(t, "unjournaled"), trees(t, "journaled"))
	require.Equal(t, 4, len(commits(t, "journaled")))
	require.Zero(t, r.entries(t, "journaled"), "every entry was trimmed once its commit went through")
}

// downAfter takes the first n commits, one window each (it chains
// nothing), and refuses the rest: the windows after them stay in the
// worker.
type downAfter struct {
	forges.Forge
	mu sync.Mutex
	n  int
}

func (d *downAfter) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	d.mu.Lock()
	up := d.n > 0
	d.n--
	d.mu.Unlock()
	if !up {
		return forges.CommitResult{}, errors.New("the forge is down")
	}
	return d.Forge.Commit(ctx, req)
}

// TestAWorkerKilledMidWindowIsRestoredByTheNextOwnerVersionByVersion: 50
// writes by two authors taking turns every five are ten windows. The first
// owner is killed (discarded: no last commit) with them journaled, and a
// new owner under another claim commits what the first did not, each
// window its own commit by its author, as a worker that never crashed.
func TestAWorkerKilledMidWindowIsRestoredByTheNextOwnerVersionByVersion(t *testing.T) {
	writes := authoredWrites(50)
	for _, tc := range []struct {
		name string
		// committed is how many windows the first owner commits before
		// its forge goes down; the journal then holds the pending windows
		// and the open one, the committed ones trimmed.
		committed int
	}{{name: "nothing-committed"}, {name: "three-committed", committed: 3}} {
		t.Run(tc.name, func(t *testing.T) {
			r := startJournal(t)
			reference(t, "uncrashed-"+tc.name, writes)
			repo := "crashed-" + tc.name
			first := r.ownedRepo(t, repo, "replica-a", func(f forges.Forge) forges.Forge {
				return &downAfter{Forge: f, n: tc.committed}
			})
			writeAll(t, first.w, writes)
			want := 50 - 5*tc.committed
			require.Eventually(t, func() bool { return len(commits(t, repo)) == tc.committed && r.entries(t, repo) == want },
				10*time.Second, 10*time.Millisecond)
			first.kill()
			require.Len(t, commits(t, repo), tc.committed)
			require.Equal(t, want, r.entries(t, repo), "the killed owner's writes wait in the journal")

			r.claim(t, repo, "replica-b")
			second := runWorker(t, repo, nil, journaledBy(t, r.journal, "replica-b"))
			flush(t, second.w)
			require.Equal(t, trees(t, "uncrashed-"+tc.name), trees(t, repo),
				"every window the first owner accepted is its own commit, by its author, as without the crash")
			require.Len(t, commits(t, repo), 10)
			require.Zero(t, r.entries(t, repo))
		})
	}
}

// TestASecretIsSealedInTheJournalAndRestored: a sensitive write is
// journaled sealed (it cannot be read without the key), and a new owner
// with the same key commits it encrypted.
func TestASecretIsSealedInTheJournalAndRestored(t *testing.T) {
	r := startJournal(t)
	id, _, err := encryption.GenerateIdentity(time.Now())
	require.NoError(t, err)
	enc, err := encryption.New(encryption.Keys{Identities: []string{id}})
	require.NoError(t, err)
	first := r.ownedRepo(t, "sealed", "replica-a", func(f forges.Forge) forges.Forge { return &downAfter{Forge: f} })
	setEncryptor(t, first.w, enc)
	write(t, first.w, branch.Author{}, secret("db", "aHVudGVyMg=="))
	require.Eventually(t, func() bool { return r.entries(t, "sealed") == 1 }, 10*time.Second, 10*time.Millisecond)
	first.kill()
	entries, err := r.journal.Read(context.Background(), branchOf("sealed"))
	require.NoError(t, err)
	_, err = branch.DecodeJournal(entries[0].Data)
	require.ErrorIs(t, err, branch.ErrSensitiveUnsealed, "without the key the entry cannot be read")

	r.claim(t, "sealed", "replica-b")
	second := runWorker(t, "sealed", nil, journaledBy(t, r.journal, "replica-b"),
		branch.Target{Key: target, Path: "mirror", Encryptor: enc})
	flush(t, second.w)
	file := show(t, "sealed", "mirror/team/secrets/db.sops.yaml")
	require.NotContains(t, file, "aHVudGVyMg==")
	require.Zero(t, r.entries(t, "sealed"))
}

func TestCursorsAreJournaledAfterTheWritesTheyPass(t *testing.T) {
	r := startJournal(t)
	counting := &countingJournal{Journal: r.journal}
	r.journal = counting
	run := r.ownedRepo(t, "cursors", "replica-a", nil)
	store := func(rv string) {
		t.Helper()
		stored := make(chan error, 1)
		require.NoError(t, run.w.JournalCursors(context.Background(),
			func(head string) map[string]string {
				return map[string]string{"uid:/v1/configmaps:team": "f " + rv + " " + head}
			},
			func(err error) { stored <- err }))
		require.NoError(t, <-stored)
	}
	sent := 0
	for round := 1; round <= 3; round++ {
		for range 20 {
			sent++
			write(t, run.w, branch.Author{}, cm(fmt.Sprintf("o%d", sent%9), fmt.Sprint(sent)))
		}
		store(fmt.Sprint(sent))
		counting.mu.Lock()
		last := counting.cursors[len(counting.cursors)-1]
		counting.mu.Unlock()
		require.GreaterOrEqual(t, last.entries, sent, "round %d: the cursor went in after every write before it", round)
		if round == 2 {
			flush(t, run.w)
		}
	}
	cursor, err := (&redisstore.Cursors{Client: r.client, Prefix: "test:"}).Load(context.Background(), "uid:/v1/configmaps:team")
	require.NoError(t, err)
	head, err := git.Git("cursors", "rev-parse", "main")
	require.NoError(t, err)
	require.Equal(t, "f 60 "+head, cursor, "the head the worker knew: Git holds it, the journal what is past it")
	require.Equal(t, 20, r.entries(t, "cursors"), "the writes after the last commit wait in the journal")
}

// TestACursorBeforeTheFirstCommitNamesTheBranchHead: a worker started on
// an existing branch stores its cursors with the head it finds, before it
// committed anything.
func TestACursorBeforeTheFirstCommitNamesTheBranchHead(t *testing.T) {
	r := startJournal(t)
	first := r.ownedRepo(t, "headed", "replica-a", nil)
	write(t, first.w, branch.Author{}, cm("a", "1"))
	flush(t, first.w)
	head, err := git.Git("headed", "rev-parse", "main")
	require.NoError(t, err)

	second := runWorker(t, "headed", nil, journaledBy(t, r.journal, "replica-a"))
	write(t, second.w, branch.Author{}, cm("a", "2"))
	stored, done := make(chan string, 1), make(chan error, 1)
	require.NoError(t, second.w.JournalCursors(context.Background(),
		func(head string) map[string]string { stored <- head; return map[string]string{"k": "f 1 " + head} },
		func(err error) { done <- err }))
	require.NoError(t, <-done)
	require.Equal(t, head, <-stored)
}

func TestAWorkerWhoseClaimWasTakenCommitsNothingMore(t *testing.T) {
	r := startJournal(t)
	run, lost := r.claimedWorker(t, "deposed", "replica-a")
	write(t, run.w, branch.Author{}, cm("a", "1"))
	flush(t, run.w)
	require.Len(t, commits(t, "deposed"), 1)

	r.claim(t, "deposed", "replica-b")
	write(t, run.w, branch.Author{}, cm("a", "2"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.Error(t, run.w.Flush(ctx, target), "the flush is not answered by a commit")
	o := <-lost
	require.ErrorIs(t, o.Err, branch.ErrClaimLost)
	<-run.done
	require.ErrorIs(t, run.err, branch.ErrClaimLost)
	require.Len(t, commits(t, "deposed"), 1, "no commit after the claim was lost")
	require.Zero(t, r.entries(t, "deposed"), "nothing of the deposed owner reached the new owner's journal")
}

// TestARedisOutageCommitsFromMemoryAndJournalsAgainAfter: while Redis
// does not answer the worker commits what it took from memory; once Redis
// is back (empty: no persistence, so the engine claims the branch again)
// it journals again.
func TestARedisOutageCommitsFromMemoryAndJournalsAgainAfter(t *testing.T) {
	r := startJournal(t)
	run := r.ownedRepo(t, "outage", "replica-a", nil)
	write(t, run.w, branch.Author{}, cm("a", "1"))
	flush(t, run.w)

	r.server.Stop()
	write(t, run.w, branch.Author{}, cm("a", "2"))
	flush(t, run.w)
	require.Len(t, commits(t, "outage"), 2, "the outage holds no commit back")
	require.Contains(t, show(t, "outage", "mirror/team/configmaps/a.yaml"), `v: "2"`)

	require.NoError(t, r.server.Restart())
	r.claim(t, "outage", "replica-a")
	write(t, run.w, branch.Author{}, cm("a", "3"))
	require.Eventually(t, func() bool {
		entries, err := r.journal.Read(context.Background(), branchOf("outage"))
		return err == nil && len(entries) == 1
	}, 10*time.Second, 10*time.Millisecond, "the write after the outage is journaled")
	flush(t, run.w)
	require.Len(t, commits(t, "outage"), 3)
	require.Zero(t, r.entries(t, "outage"))
}

// claimedWorker runs a journaled worker on a new repository whose claim
// token holds, and the channel its OutcomeLost arrives on.
func (r *redisJournal) claimedWorker(t *testing.T, repo, token string) (*running, chan branch.Outcome) {
	t.Helper()
	_, err := git.CreateBareRepo(repo)
	require.NoError(t, err)
	r.claim(t, repo, token)
	lost := make(chan branch.Outcome, 1)
	run := runWorker(t, repo, nil, func(c *branch.Config) {
		journaledBy(t, r.journal, token)(c)
		onOutcome(t, c, branch.OutcomeLost, func(o branch.Outcome) { lost <- o })
	})
	return run, lost
}

// TestAWorkerWhoseClaimExpiredCommitsOnAndJournalsOnceItIsWonAgain: Redis
// down for every replica lets the claim expire with nobody to take it.
// The journal refuses the worker's writes (nobody holds the claim), yet
// the worker neither stops nor drops what it took: it commits from memory
// and, once its token holds the claim again (the assigner's next renewal),
// journals and trims as before.
func TestAWorkerWhoseClaimExpiredCommitsOnAndJournalsOnceItIsWonAgain(t *testing.T) {
	r := startJournal(t)
	run, lost := r.claimedWorker(t, "expired", "replica-a")
	write(t, run.w, branch.Author{}, cm("a", "1"))
	flush(t, run.w)

	require.NoError(t, r.client.Del(context.Background(), "test:claim:"+branchOf("expired")).Err())
	write(t, run.w, branch.Author{}, cm("a", "2"))
	flush(t, run.w)
	require.Len(t, commits(t, "expired"), 2, "the expired claim holds no commit back")
	require.Empty(t, lost, "a claim nobody holds is not lost")

	r.claim(t, "expired", "replica-a")
	write(t, run.w, branch.Author{}, cm("a", "3"))
	require.Eventually(t, func() bool {
		entries, err := r.journal.Read(context.Background(), branchOf("expired"))
		return err == nil && len(entries) == 1
	}, 10*time.Second, 10*time.Millisecond, "the write after the claim was won again is journaled")
	flush(t, run.w)
	require.Len(t, commits(t, "expired"), 3)
	require.Zero(t, r.entries(t, "expired"))
	require.Empty(t, lost)
}

func TestAJournalWithoutASealerIsRefused(t *testing.T) {
	r := startJournal(t)
	cfg := branch.Config{Key: branch.Key{Branch: "main"}, Journal: r.journal, ClaimToken: "replica-a"}
	require.ErrorIs(t, cfg.CheckJournal(), branch.ErrJournalUnsealed)
	w := branch.New(cfg)
	require.ErrorIs(t, w.Run(context.Background()), branch.ErrJournalUnsealed)
}

// TestAReplayIsJournaledInAFewAppends: 2,000 objects of a replay, sent as
// fast as the worker takes them, cost a few appends, not one each.
func TestAReplayIsJournaledInAFewAppends(t *testing.T) {
	r := startJournal(t)
	counting := &countingJournal{Journal: r.journal}
	r.journal = counting
	run := r.ownedRepo(t, "replay-appends", "replica-a", nil)
	for i := range 2000 {
		wr := cm(fmt.Sprintf("o%d", i), "1")
		wr.Replay = true
		write(t, run.w, branch.Author{}, wr)
	}
	appends, entries := counting.counts()
	flush(t, run.w)
	t.Logf("2000 replayed writes: %d appends before the flush, %d entries", appends, entries)
	require.Eventually(t, func() bool { _, n := counting.counts(); return n == 2000 }, 10*time.Second, 10*time.Millisecond)
	appends, _ = counting.counts()
	t.Logf("2000 replayed writes: %d appends in all", appends)
	require.Less(t, appends, 2000/10, "writes are journaled in batches")
	require.Zero(t, r.entries(t, "replay-appends"))
}
