package branch_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// git is the real Git remote the worker commits to (file:// through the
// go-git forge), shared by the package.
var git *harness.GitServer

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "branch-test-")
	if err == nil {
		git, err = harness.StartGitServer(dir, harness.GitServerOptions{})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	git.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

var target = branch.TargetKey{Namespace: "team", Name: "mirror"}

// newWorker starts a worker on a fresh repository. The commit window is
// long, so a test decides when a window closes (Flush) unless it says
// otherwise.
func newWorker(t *testing.T, repo string, forge func(forges.Forge) forges.Forge, tune func(*branch.Config)) *branch.Worker {
	t.Helper()
	_, err := git.CreateBareRepo(repo)
	require.NoError(t, err)
	return startWorker(t, repo, forge, tune)
}

// startWorker starts a worker on an existing repository, as the operator
// does after a restart.
func startWorker(t *testing.T, repo string, forge func(forges.Forge) forges.Forge, tune func(*branch.Config)) *branch.Worker {
	t.Helper()
	return runWorker(t, repo, forge, tune).w
}

// onOutcome streams the worker's outcomes to a consumer that hands fn
// those of kind and answers the waiters after, as the engine's does: by
// the time a Flush returns, fn has seen what the flush's commit emitted.
func onOutcome(t *testing.T, c *branch.Config, kind branch.OutcomeKind, fn func(branch.Outcome)) {
	t.Helper()
	stream := make(chan branch.Outcome, 16)
	c.Outcomes = stream
	done := make(chan struct{})
	go func() {
		defer close(done)
		for o := range stream {
			if o.Kind == kind {
				fn(o)
			}
			o.Answer()
		}
	}()
	// Registered before the worker's own cleanup, so it runs after the
	// worker stopped: nothing sends on the stream any more.
	t.Cleanup(func() { close(stream); <-done })
}

func cm(name, value string) branch.Write {
	return branch.Write{
		ID:   manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: name},
		YAML: []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: team\ndata:\n  v: %q\n", name, value)),
	}
}

func write(t *testing.T, w *branch.Worker, author branch.Author, wr branch.Write) {
	t.Helper()
	require.NoError(t, w.Write(context.Background(), target, author, wr))
}

func flush(t *testing.T, w *branch.Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, w.Flush(ctx, target))
}

func show(t *testing.T, repo, path string) string {
	t.Helper()
	out, err := git.ReadFile(repo, "main", path)
	require.NoError(t, err)
	return out
}

func commits(t *testing.T, repo string) []string {
	t.Helper()
	out, err := git.Git(repo, "log", "--format=%an|%s", "main")
	if err != nil {
		return nil
	}
	return strings.Split(out, "\n")
}

func TestAWindowGroupsWritesAndTheLastWriteWins(t *testing.T) {
	w := newWorker(t, "grouping", nil, nil)
	write(t, w, branch.Author{}, cm("a", "1"))
	write(t, w, branch.Author{}, cm("b", "1"))
	write(t, w, branch.Author{}, cm("a", "2"))
	flush(t, w)
	require.Equal(t, []string{"GitOps Reverser|Change 2 objects in team/mirror: 2 created"}, commits(t, "grouping"))
	require.Contains(t, show(t, "grouping", "mirror/team/configmaps/a.yaml"), `v: "2"`)
	require.Contains(t, show(t, "grouping", "mirror/README.md"), "GitOps Reverser")
}

func TestAWindowOfSeveralToolsEndsInATrailerPerTool(t *testing.T) {
	w := newWorker(t, "tools", nil, nil)
	with := func(wr branch.Write, tools ...string) branch.Write {
		wr.ChangedWith = tools
		return wr
	}
	write(t, w, branch.Author{}, with(cm("a", "1"), "kubectl-edit"))
	write(t, w, branch.Author{}, with(cm("b", "1"), "helm"))
	write(t, w, branch.Author{}, with(cm("a", "2"), "helm"))
	write(t, w, branch.Author{}, with(cm("c", "1"), "kubectl-edit"))
	flush(t, w)
	msg, err := git.Git("tools", "log", "-1", "--format=%an%n%B", "main")
	require.NoError(t, err)
	require.Equal(t, "GitOps Reverser\nChange 3 objects in team/mirror: 3 created\n\n- create ConfigMap team/a\n- create ConfigMap team/b\n"+
		"- create ConfigMap team/c\n\nChanged-With: helm\nChanged-With: kubectl-edit", strings.TrimRight(msg, "\n"),
		"each tool once, sorted; a tool is never the author")
}

func TestEachAuthorGetsItsOwnCommit(t *testing.T) {
	w := newWorker(t, "authors", nil, nil)
	alice := branch.Author{Name: "alice", Email: "alice@example.com", Kind: branch.AuthorUser}
	write(t, w, alice, cm("a", "1"))
	write(t, w, branch.Author{}, cm("b", "1"))
	flush(t, w)
	require.Equal(t, []string{"GitOps Reverser|Create ConfigMap team/b", "alice|Create ConfigMap team/a"}, commits(t, "authors"))
	committer, err := git.Git("authors", "log", "-1", "--format=%cn", "main~1")
	require.NoError(t, err)
	require.Equal(t, "GitOps Reverser", committer, "the operator commits an attributed change")
}

func TestAWindowClosesBySilenceAndByItsBufferLimit(t *testing.T) {
	w := newWorker(t, "silence", nil, func(c *branch.Config) { c.CommitWindow = 50 * time.Millisecond })
	write(t, w, branch.Author{}, cm("a", "1"))
	require.Eventually(t, func() bool { return len(commits(t, "silence")) == 1 }, 10*time.Second, 20*time.Millisecond)

	w = newWorker(t, "buffer", nil, func(c *branch.Config) { c.BufferMax = 150 })
	write(t, w, branch.Author{}, cm("a", "1"))
	write(t, w, branch.Author{}, cm("b", "1"))
	require.Eventually(t, func() bool { return len(commits(t, "buffer")) == 1 }, 10*time.Second, 20*time.Millisecond,
		"two documents pass 150 bytes and close the window without waiting an hour")
}

func TestAReplaySweepDeletesWhatIsGoneInOneReconcileCommit(t *testing.T) {
	w := newWorker(t, "sweep", nil, nil)
	write(t, w, branch.Author{}, cm("stays", "1"))
	write(t, w, branch.Author{}, cm("goes", "1"))
	flush(t, w)
	present := []manifest.ObjectID{cm("stays", "").ID, cm("new", "").ID}
	write(t, w, branch.Author{}, cm("new", "1"))
	require.NoError(t, w.Sync(context.Background(), target,
		&branch.Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"}, Present: present}, true))
	require.Eventually(t, func() bool { return len(commits(t, "sweep")) == 2 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "GitOps Reverser|Reconcile team/mirror with the cluster: 1 created, 1 deleted", commits(t, "sweep")[0])
}

// conflicting pushes an external commit before the first n commits, so the
// worker's head is stale each time.
type conflicting struct {
	forges.Forge
	t     *testing.T
	repo  string
	times atomic.Int32
}

func (c *conflicting) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	if c.times.Add(-1) >= 0 {
		pushExternal(c.t, c.repo, fmt.Sprintf("human-%d.txt", c.times.Load()))
	}
	return c.Forge.Commit(ctx, req)
}

func TestAConflictReplaysOnTheNewHeadAndKeepsTheExternalCommit(t *testing.T) {
	var c *conflicting
	w := newWorker(t, "conflict", func(f forges.Forge) forges.Forge {
		c = &conflicting{Forge: f, t: t, repo: "conflict"}
		return c
	}, nil)
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w) // the first commit creates the branch
	c.times.Store(2)
	write(t, w, branch.Author{}, cm("b", "1"))
	flush(t, w)
	log := commits(t, "conflict")
	require.Equal(t, "GitOps Reverser|Create ConfigMap team/b", log[0])
	require.Len(t, log, 4, "two external commits kept, ours on top: %v", log)
	require.NotEmpty(t, show(t, "conflict", "human-0.txt"))
}

// failing fails the first n commits with err.
type failing struct {
	forges.Forge
	mu  sync.Mutex
	n   int
	err error
}

func (f *failing) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	f.mu.Lock()
	if f.n > 0 {
		f.n--
		f.mu.Unlock()
		return forges.CommitResult{}, f.err
	}
	f.mu.Unlock()
	return f.Forge.Commit(ctx, req)
}

func TestAFailedCommitKeepsItsWritesAndRetries(t *testing.T) {
	var errs []error
	var mu sync.Mutex
	w := newWorker(t, "retry", func(f forges.Forge) forges.Forge {
		return &failing{Forge: f, n: 2, err: &forges.Error{Kind: forges.KindRateLimited, RetryAfter: 50 * time.Millisecond}}
	}, func(c *branch.Config) {
		onOutcome(t, c, branch.OutcomeFailed, func(o branch.Outcome) { mu.Lock(); errs = append(errs, o.Err); mu.Unlock() })
	})
	write(t, w, branch.Author{}, cm("a", "1"))
	err := w.Flush(context.Background(), target)
	require.ErrorIs(t, err, forges.ErrRateLimited, "the flush reports the failure")
	require.Eventually(t, func() bool { return len(commits(t, "retry")) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the writes were kept and land once the forge accepts")
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(errs), 1)
}

func TestAnUnencryptedSensitiveWriteIsRefusedAndNothingIsCommitted(t *testing.T) {
	var refused []manifest.Refusal
	w := newWorker(t, "sensitive", nil, func(c *branch.Config) {
		onOutcome(t, c, branch.OutcomePlanned, func(o branch.Outcome) { refused = o.Refusals })
	})
	secret := branch.Write{
		ID:        manifest.ObjectID{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "team", Name: "db"},
		YAML:      []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: team\nstringData:\n  password: plaintext\n"),
		Sensitive: true,
	}
	write(t, w, branch.Author{}, secret)
	flush(t, w)
	require.Empty(t, commits(t, "sensitive"))
	require.Len(t, refused, 1)
	require.Equal(t, manifest.RefusalNotEncrypted, refused[0].Reason)
}

func pushExternal(t *testing.T, repo, file string) {
	t.Helper()
	_, err := git.CommitFiles(repo, map[string]string{file: "human\n"}, "human edit")
	require.NoError(t, err)
}

func TestContentATargetCannotManageHoldsBackOnlyThatTarget(t *testing.T) {
	var failures []error
	var mu sync.Mutex
	w := newWorker(t, "parked", nil, func(c *branch.Config) {
		onOutcome(t, c, branch.OutcomeFailed, func(o branch.Outcome) { mu.Lock(); failures = append(failures, o.Err); mu.Unlock() })
	})
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)
	pushExternal(t, "parked", "mirror/values.yaml") // not a Kubernetes object: the path is refused
	other := branch.TargetKey{Namespace: "team", Name: "other"}
	ctx := context.Background()
	require.NoError(t, w.SetTarget(ctx, branch.Target{Key: other, Path: "other"}))

	write(t, w, branch.Author{}, cm("b", "1"))
	err := w.Flush(ctx, target)
	var unsupported *manifest.UnsupportedContentError
	require.ErrorAs(t, err, &unsupported, "the refused path is reported")
	require.NoError(t, w.Write(ctx, other, branch.Author{}, cm("c", "1")))
	require.NoError(t, w.Flush(ctx, other), "another target on the branch still commits")
	require.NotEmpty(t, show(t, "parked", "other/team/configmaps/c.yaml"))
}

// TestARetryWithNothingToCommitStillSettlesTheTarget: a window whose
// writes are already in Git fails on a human's file that is not a
// Kubernetes object; once the file is removed the retry commits nothing, and
// the worker must still say the target's window went through, or its status
// keeps the old failure.
func TestARetryWithNothingToCommitStillSettlesTheTarget(t *testing.T) {
	first := newWorker(t, "settled", nil, nil)
	write(t, first, branch.Author{}, cm("a", "1"))
	flush(t, first)
	pushExternal(t, "settled", "mirror/values.yaml")

	// After a restart the replay writes what is already in Git.
	settled := make(chan branch.TargetKey, 16)
	w := startWorker(t, "settled", nil, func(c *branch.Config) {
		onOutcome(t, c, branch.OutcomeWentThrough, func(o branch.Outcome) { settled <- o.Target })
	})
	write(t, w, branch.Author{}, cm("a", "1"))
	var unsupported *manifest.UnsupportedContentError
	require.ErrorAs(t, w.Flush(context.Background(), target), &unsupported)
	require.Empty(t, settled, "a failed window does not settle")

	_, err := git.RemoveFiles("settled", []string{"mirror/values.yaml"}, "human removes values.yaml")
	require.NoError(t, err)
	before := commits(t, "settled")
	select {
	case k := <-settled:
		require.Equal(t, target, k, "the retry settles the target")
	case <-time.After(30 * time.Second):
		require.Fail(t, "the retry never settled the target")
	}
	flush(t, w)
	require.Equal(t, before, commits(t, "settled"), "the retry had nothing to commit")
}

// TestAPlanningFailureNamesTheGitTargetOnce: each layer of the error adds
// only what it knows, so the target and its root appear once in the text a
// user reads in the GitTarget's condition.
func TestAPlanningFailureNamesTheGitTargetOnce(t *testing.T) {
	var reported error
	var mu sync.Mutex
	w := newWorker(t, "named-once", nil, func(c *branch.Config) {
		onOutcome(t, c, branch.OutcomeFailed, func(o branch.Outcome) { mu.Lock(); reported = o.Err; mu.Unlock() })
	})
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)
	pushExternal(t, "named-once", "mirror/values.yaml")
	write(t, w, branch.Author{}, cm("b", "1"))
	err := w.Flush(context.Background(), target)
	require.Error(t, err)
	mu.Lock()
	defer mu.Unlock()
	for _, text := range []string{err.Error(), reported.Error()} {
		require.Equal(t, 1, strings.Count(text, "GitTarget "+target.String()), text)
		require.Equal(t, 1, strings.Count(text, `"mirror"`), "the target's root once: %s", text)
		require.Contains(t, text, "mirror/values.yaml", "the refused file is named")
	}
}

func TestALoneWindowIsNeverHeldByThePushBudget(t *testing.T) {
	w := newWorker(t, "budget", nil, func(c *branch.Config) { c.PushBurst, c.PushInterval = 1, time.Hour })
	for i := range 4 {
		write(t, w, branch.Author{}, cm("a", fmt.Sprint(i)))
		flush(t, w) // would wait an hour if a lone window spent from the budget
	}
	require.Len(t, commits(t, "budget"), 4)
}

func TestWindowsWaitingOnARateLimitLandAsOneCommit(t *testing.T) {
	w := newWorker(t, "merged", func(f forges.Forge) forges.Forge {
		return &failing{Forge: f, n: 1, err: &forges.Error{Kind: forges.KindRateLimited, RetryAfter: 200 * time.Millisecond}}
	}, nil)
	write(t, w, branch.Author{}, cm("a", "1"))
	require.ErrorIs(t, w.Flush(context.Background(), target), forges.ErrRateLimited)
	write(t, w, branch.Author{}, cm("b", "1"))
	flush(t, w) // closes the second window; it waits with the first, and both land once the forge accepts
	require.Equal(t, []string{"GitOps Reverser|Change 2 objects in team/mirror: 2 created"}, commits(t, "merged"))
}

func TestADiscardedWorkerCommitsNothingOnItsWayOut(t *testing.T) {
	for _, discard := range []bool{false, true} {
		repo := fmt.Sprintf("discarded-%t", discard)
		_, err := git.CreateBareRepo(repo)
		require.NoError(t, err)
		client, err := gogit.New(gogit.Options{URL: git.FileURL(repo)})
		require.NoError(t, err)
		w := branch.New(branch.Config{Key: branch.Key{ProviderNamespace: "team", Provider: repo, Branch: "main"}, Forge: client,
			CommitWindow: time.Hour, Log: testr.New(t)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(ctx) }()
		require.NoError(t, w.SetTarget(ctx, branch.Target{Key: target, Path: "mirror"}))
		write(t, w, branch.Author{}, cm("a", "1"))
		// The loop has taken the write once the queue is empty; it handles
		// one message fully before it sees the cancel.
		require.Eventually(t, func() bool { return w.QueueDepth() == 0 }, 10*time.Second, time.Millisecond)
		if discard {
			w.Discard()
		}
		cancel()
		<-done
		if discard {
			require.Empty(t, commits(t, repo), "a replaced worker's open window is dropped, not committed under old settings")
		} else {
			require.Len(t, commits(t, repo), 1, "a stopping worker commits its open window")
		}
	}
}

func TestAReplayThatNoLongerFindsAnObjectDeletesItDespiteAnOlderWriteInTheWindow(t *testing.T) {
	w := newWorker(t, "stale-write", nil, nil)
	write(t, w, branch.Author{}, cm("gone", "1"))
	write(t, w, branch.Author{}, cm("stays", "1"))
	flush(t, w)
	write(t, w, branch.Author{}, cm("gone", "2")) // a live update, then the stream restarts and gone is deleted
	require.NoError(t, w.Sync(context.Background(), target,
		&branch.Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"}, Present: []manifest.ObjectID{cm("stays", "").ID}}, true))
	require.Eventually(t, func() bool { return len(commits(t, "stale-write")) == 2 }, 10*time.Second, 20*time.Millisecond)
	_, err := git.Git("stale-write", "show", "main:mirror/team/configmaps/gone.yaml")
	require.Error(t, err, "the replay did not find gone: it is deleted, whatever the window held")
}

// TestARequestForAWindowAlreadyInGitEndsAlreadyPresent: a request closes
// a window whose changes are all in Git: no commit, and the request says
// so instead of waiting.
func TestARequestForAWindowAlreadyInGitEndsAlreadyPresent(t *testing.T) {
	request := &branch.Request{ID: "team/same", Name: "same", Target: target, Message: "nothing new"}
	got := make(chan branch.RequestOutcome, 1)
	w := newWorker(t, "request-already-present", nil, func(c *branch.Config) {
		onOutcome(t, c, branch.OutcomeRequest, func(o branch.Outcome) {
			if o.Request == request {
				got <- o.Result
			}
		})
	})
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)
	before := commits(t, "request-already-present")

	write(t, w, branch.Author{}, cm("a", "1"))
	request.Deadline = time.Now()
	require.NoError(t, w.Attach(context.Background(), request))
	select {
	case o := <-got:
		require.Equal(t, branch.RequestAlreadyPresent, o.Reason)
	case <-time.After(30 * time.Second):
		t.Fatal("the request was never answered")
	}
	require.Equal(t, before, commits(t, "request-already-present"))
}
