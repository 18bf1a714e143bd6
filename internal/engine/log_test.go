package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// lockedBuffer collects log lines written from the worker's goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var lines []string
	scanner := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for scanner.Scan() {
		lines = append(lines, scanner.Text())
	}
	return lines
}

// refusingForge fails every commit, as an unreachable forge does.
type refusingForge struct{ forges.Forge }

func (refusingForge) Commit(context.Context, forges.CommitRequest) (forges.CommitResult, error) {
	return forges.CommitResult{}, &forges.Error{Kind: forges.KindTransient, Op: "commit", Err: fmt.Errorf("connection reset")}
}

// duplicateKeys lists the keys that occur more than once at the top level
// of one JSON object, which strict JSON log parsers reject.
func duplicateKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(line)))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok, line)
	seen := map[string]bool{}
	var dups []string
	for dec.More() {
		key, err := dec.Token()
		require.NoError(t, err)
		if seen[key.(string)] {
			dups = append(dups, key.(string))
		}
		seen[key.(string)] = true
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	return dups
}

// TestALoggedCommitFailureNamesTheWorkerOnce runs a worker the way the
// engine starts it, with the operator's JSON logger, and checks that the
// commit-failure line (and every other) has each key once.
func TestALoggedCommitFailureNamesTheWorkerOnce(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "mirror.git")
	out, err := exec.Command("git", "init", "--bare", "--initial-branch=main", repo).CombinedOutput()
	require.NoError(t, err, string(out))
	client, err := gogit.New(gogit.Options{URL: "file://" + repo})
	require.NoError(t, err)

	logs := &lockedBuffer{}
	e := New(Options{Log: zap.New(zap.WriteTo(logs), zap.UseDevMode(false))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := branch.Key{ProviderNamespace: "team", Provider: "git", Branch: "main"}
	// The worker's outcomes (the Flush's answer among them) leave on the
	// engine's stream; Start would run its consumer.
	fanned := make(chan struct{})
	go e.runOutcomes(fanned)
	w, _, _ := e.ensureWorker(ctx, key, WorkerSettings{Config: &branch.Config{Forge: refusingForge{client},
		CommitWindow: time.Hour, RetryBackoff: time.Hour}})
	defer func() { e.stopAll(); close(e.outcomes); <-fanned }()
	target := branch.TargetKey{Namespace: "team", Name: "mirror"}
	require.NoError(t, w.SetTarget(ctx, branch.Target{Key: target, Path: "mirror"}))
	require.NoError(t, w.Write(ctx, target, branch.Author{}, branch.Write{
		ID:   manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "team", Name: "a"},
		YAML: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: team\n"),
	}))
	require.ErrorIs(t, w.Flush(ctx, target), forges.ErrTransient)

	failures := 0
	for _, line := range logs.lines() {
		require.Empty(t, duplicateKeys(t, line), "keys appear once: %s", line)
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry))
		if entry["msg"] == "commit failed; keeping the writes for a retry" {
			failures++
			require.Equal(t, key.String(), entry["worker"], line)
		}
	}
	require.Equal(t, 1, failures, "the failure is logged: %v", logs.lines())
}
