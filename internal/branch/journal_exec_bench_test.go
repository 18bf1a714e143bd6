package branch_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/internal/branch"
)

// BenchmarkJournaledReplay: a replay of 2,000 objects into a journaled
// worker (real redis-server), until every write is journaled; no commit
// (the window stays open). burst sends as fast as the worker takes them;
// paced does ~20 µs and slow ~200 µs of hashing per object first, as a
// stream preparing objects does, so the worker often finds its queue
// empty and the linger (JournalLinger) gathers the records. appends/op is
// the round trips the journal cost per replay.
func BenchmarkJournaledReplay(b *testing.B) {
	for _, mode := range []struct {
		name string
		work int
	}{{"burst", 0}, {"paced", 40}, {"slow", 400}} {
		b.Run(mode.name, func(b *testing.B) {
			r := startJournal(b)
			repo := "bench-replay-" + mode.name
			_, err := git.CreateBareRepo(repo)
			if err != nil {
				b.Fatal(err)
			}
			r.claim(b, repo, "replica-a")
			counting := &countingJournal{Journal: r.journal}
			run := runBenchWorker(b, repo, journaledBy(b, counting, "replica-a"))
			writes := make([]branch.Write, 2000)
			for i := range writes {
				writes[i] = cm(fmt.Sprintf("o%d", i), "1")
				writes[i].Replay = true
			}
			pad := make([]byte, 512)
			b.ResetTimer()
			for i := range b.N {
				for _, wr := range writes {
					for range mode.work {
						sum := sha256.Sum256(pad)
						pad[0] = sum[0]
					}
					if err := run.Write(b.Context(), target, branch.Author{}, wr); err != nil {
						b.Fatal(err)
					}
				}
				waitJournaled(counting, 2000*(i+1))
			}
			b.StopTimer()
			appends, _ := counting.counts()
			b.ReportMetric(float64(appends)/float64(b.N), "appends/op")
		})
	}
}

// waitJournaled polls the counting journal until n records went in: the
// sentinel that the replay is journaled.
func waitJournaled(counting *countingJournal, n int) {
	poll := time.NewTicker(100 * time.Microsecond)
	defer poll.Stop()
	for {
		if _, got := counting.counts(); got == n {
			return
		}
		<-poll.C
	}
}

func runBenchWorker(b *testing.B, repo string, tune func(*branch.Config)) *branch.Worker {
	b.Helper()
	forge, err := gogit.New(gogit.Options{URL: git.FileURL(repo)})
	if err != nil {
		b.Fatal(err)
	}
	cfg := branch.Config{Key: branch.Key{ProviderNamespace: "team", Provider: repo, Branch: "main"}, Forge: forge,
		CommitWindow: time.Hour, BufferMax: 64 << 20}
	tune(&cfg)
	w := branch.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	b.Cleanup(func() { w.Discard(); cancel(); <-done })
	if err := w.SetTarget(ctx, branch.Target{Key: target, Path: "mirror"}); err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkJournalOverhead: 500 changed ConfigMaps written and flushed
// (one commit to a real Git remote), by a worker without a journal and by
// one journaling into a real redis-server: what the journal adds to a
// window end to end (its appends, the append before the commit, the trim).
func BenchmarkJournalOverhead(b *testing.B) {
	for _, journaled := range []bool{false, true} {
		name := "none"
		if journaled {
			name = "journaled"
		}
		b.Run(name, func(b *testing.B) {
			repo := "bench-overhead-" + name
			if _, err := git.CreateBareRepo(repo); err != nil {
				b.Fatal(err)
			}
			tune := func(*branch.Config) {}
			var counting *countingJournal
			if journaled {
				r := startJournal(b)
				r.claim(b, repo, "replica-a")
				counting = &countingJournal{Journal: r.journal}
				tune = journaledBy(b, counting, "replica-a")
			}
			w := runBenchWorker(b, repo, tune)
			b.ResetTimer()
			for i := range b.N {
				for j := range 500 {
					if err := w.Write(b.Context(), target, branch.Author{}, cm(fmt.Sprintf("o%d", j), fmt.Sprint(i))); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Flush(b.Context(), target); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if counting != nil {
				appends, _ := counting.counts()
				b.ReportMetric(float64(appends)/float64(b.N), "appends/op")
			}
		})
	}
}
