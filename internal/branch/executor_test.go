package branch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/configbutler/gitops-reverser/forges"
)

// movingBranch is a branch another writer keeps moving: every commit
// conflicts until stop closes, then commits are accepted.
type movingBranch struct {
	emptyRepository
	mu        sync.Mutex
	attempted chan struct{}
	stop      chan struct{}
}

func (m *movingBranch) Commit(ctx context.Context, req forges.CommitRequest) (forges.CommitResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.stop:
		return m.emptyRepository.Commit(ctx, req)
	default:
	}
	select {
	case m.attempted <- struct{}{}:
	default:
	}
	return forges.CommitResult{}, forges.ErrConflict
}

func (m *movingBranch) Head(ctx context.Context, branch string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.emptyRepository.Head(ctx, branch)
}

// TestAStopCancelsAConflictReplay: a window closed by another author's
// change is committed under the run context, so stopping the worker ends
// its conflict replay at once instead of waiting out the backoff; the
// stop's own last try then commits it.
func TestAStopCancelsAConflictReplay(t *testing.T) {
	forge := &movingBranch{attempted: make(chan struct{}, 1), stop: make(chan struct{})}
	w := New(Config{Key: Key{Branch: "main"}, Forge: forge, CommitWindow: time.Hour, Log: testr.New(t),
		ConflictBackoff: wait.Backoff{Duration: time.Hour, Factor: 1, Steps: 10}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	key := TargetKey{Namespace: "team", Name: "mirror"}
	require.NoError(t, w.SetTarget(ctx, Target{Key: key, Path: "mirror"}))
	require.NoError(t, w.Write(ctx, key, alice, change("one")))
	require.NoError(t, w.Write(ctx, key, bob, change("two"))) // closes Alice's window

	<-forge.attempted // the commit conflicted; the replay waits an hour
	close(forge.stop)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the stop did not end the replay's wait")
	}
	forge.mu.Lock()
	defer forge.mu.Unlock()
	require.NotEmpty(t, forge.commits, "the stop's last try commits what the replay held")
}
