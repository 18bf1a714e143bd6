package branch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// requireJitteredGrowth checks that each delay is the backoff's own step
// (base, doubled each time) plus at most jitter of it, that the delays grow,
// and that they are not all the bare steps: jitter was applied.
func requireJitteredGrowth(t *testing.T, delays []time.Duration, base time.Duration, jitter float64) {
	t.Helper()
	jittered := false
	step := base
	for i, d := range delays {
		require.GreaterOrEqual(t, d, step, "delay %d: %v", i, delays)
		require.LessOrEqual(t, d, time.Duration(float64(step)*(1+jitter)), "delay %d: %v", i, delays)
		if i > 0 {
			require.Greater(t, d, delays[i-1], "delays grow: %v", delays)
		}
		jittered = jittered || d != step
		step *= 2
	}
	require.True(t, jittered, "the delays are jittered, not the bare steps: %v", delays)
}

func TestConflictReplaysWaitAGrowingJitteredDelay(t *testing.T) {
	var c *conflicting
	rec := &retryLog{key: "replayIn"}
	w := newWorker(t, "conflict-backoff", func(f forges.Forge) forges.Forge {
		c = &conflicting{Forge: f, t: t, repo: "conflict-backoff"}
		return c
	}, func(cfg *branch.Config) { cfg.Log = logr.New(rec) })
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w) // the first commit creates the branch
	c.times.Store(4)
	write(t, w, branch.Author{}, cm("b", "1"))
	flush(t, w)
	require.Len(t, commits(t, "conflict-backoff"), 6, "four external commits kept, ours on top")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.retryIn, 4, "one wait before each replay")
	def := branch.DefaultConflictBackoff
	requireJitteredGrowth(t, rec.retryIn, def.Duration, def.Jitter)
}

func TestConflictsPastMaxAttemptsKeepTheWritesWithoutAFurtherWait(t *testing.T) {
	var c *conflicting
	rec := &retryLog{key: "replayIn"}
	w := newWorker(t, "conflict-bound", func(f forges.Forge) forges.Forge {
		c = &conflicting{Forge: f, t: t, repo: "conflict-bound"}
		return c
	}, func(cfg *branch.Config) {
		cfg.MaxAttempts = 3
		cfg.ConflictBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 10}
		cfg.Log = logr.New(rec)
	})
	write(t, w, branch.Author{}, cm("a", "1"))
	flush(t, w)
	c.times.Store(3)
	write(t, w, branch.Author{}, cm("b", "1"))
	require.ErrorIs(t, w.Flush(context.Background(), target), forges.ErrConflict)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.retryIn, 2, "a wait between attempts, none after the last")
}

// retryLog records the wait each log line names under key: "retryIn" of a
// failed commit (the default), "replayIn" of a conflict's replay.
type retryLog struct {
	key     string
	mu      sync.Mutex
	retryIn []time.Duration
}

func (r *retryLog) Init(logr.RuntimeInfo)          {}
func (r *retryLog) Enabled(int) bool               { return true }
func (r *retryLog) Error(error, string, ...any)    {}
func (r *retryLog) WithValues(...any) logr.LogSink { return r }
func (r *retryLog) WithName(string) logr.LogSink   { return r }
func (r *retryLog) Info(_ int, _ string, keysAndValues ...any) {
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		key := r.key
		if key == "" {
			key = "retryIn"
		}
		if keysAndValues[i] == key {
			d, _ := time.ParseDuration(keysAndValues[i+1].(string))
			r.mu.Lock()
			r.retryIn = append(r.retryIn, d)
			r.mu.Unlock()
		}
	}
}

func TestCommitRetriesBackOffWithJitter(t *testing.T) {
	rec := &retryLog{}
	w := newWorker(t, "retry-jitter", func(f forges.Forge) forges.Forge {
		return &failing{Forge: f, n: 4, err: &forges.Error{Kind: forges.KindTransient}}
	}, func(c *branch.Config) { c.Log = logr.New(rec) })
	write(t, w, branch.Author{}, cm("a", "1"))
	require.ErrorIs(t, w.Flush(context.Background(), target), forges.ErrTransient)
	require.Eventually(t, func() bool { return len(commits(t, "retry-jitter")) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the writes land once the forge accepts")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.retryIn, 4)
	requireJitteredGrowth(t, rec.retryIn, 20*time.Millisecond, 0.5)
}
