package branch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// BenchmarkRestartInTwoWindows restarts a worker on the go-git forge (local
// remote, the production forge unwrapped) on a branch holding n
// ConfigMaps, with nothing changed, and replays them in two windows: the
// first closes at the buffer bound after 60% of them (as a 50,000-object
// replay closes its first at 8 MiB after about 31,500), the second holds
// the rest and the sweep. parses/op is what the index decoded: the files
// past the first window's renderings, unless they wait to be confirmed.
func BenchmarkRestartInTwoWindows(b *testing.B) {
	const n = 5000
	repo := fmt.Sprintf("bench-two-windows-%d", n)
	_, err := git.CreateBareRepo(repo)
	require.NoError(b, err)
	writes := make([]branch.Write, n)
	firstBytes := 0
	for i := range writes {
		writes[i] = cm(fmt.Sprintf("cm-%05d", i), "1")
		writes[i].Replay = true
		if i < n*6/10 {
			firstBytes += len(writes[i].YAML)
		}
	}
	seed, stop := benchWorker(b, repo, 64<<20, nil)
	for _, wr := range writes {
		require.NoError(b, seed.Write(context.Background(), target, branch.Author{}, wr))
	}
	require.NoError(b, seed.Flush(context.Background(), target))
	stop()

	parses := 0
	b.ResetTimer()
	for range b.N {
		planned := make(chan struct{}, 4)
		w, stop := benchWorker(b, repo, firstBytes, planned)
		ctx := context.Background()
		present := make([]manifest.ObjectID, 0, n)
		for i, wr := range writes {
			require.NoError(b, w.Write(ctx, target, branch.Author{}, wr))
			present = append(present, wr.ID)
			if i == n*6/10-1 {
				<-planned
			}
		}
		require.NoError(b, w.Sync(ctx, target,
			&branch.Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"}, Present: present}, true))
		require.NoError(b, w.Flush(ctx, target))
		parses += branch.IndexParses(w, target)
		stop()
	}
	b.ReportMetric(float64(parses)/float64(b.N), "parses/op")
}

// benchWorker runs a worker on repo whose windows close at bufferMax
// bytes; planned, when set, hears of each window planned.
func benchWorker(b *testing.B, repo string, bufferMax int, planned chan<- struct{}) (*branch.Worker, func()) {
	b.Helper()
	client, err := gogit.New(gogit.Options{URL: git.FileURL(repo)})
	require.NoError(b, err)
	outcomes := make(chan branch.Outcome, 16)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for o := range outcomes {
			if o.Kind == branch.OutcomePlanned && planned != nil {
				planned <- struct{}{}
			}
			o.Answer()
		}
	}()
	w := branch.New(branch.Config{Key: branch.Key{ProviderNamespace: "team", Provider: repo, Branch: "main"}, Forge: client,
		CommitWindow: time.Hour, RetryBackoff: 20 * time.Millisecond, BufferMax: bufferMax, Log: logr.Discard(), Outcomes: outcomes})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	require.NoError(b, w.SetTarget(ctx, branch.Target{Key: target, Path: "mirror"}))
	return w, func() { cancel(); <-done; close(outcomes); <-consumed }
}
