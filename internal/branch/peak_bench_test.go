package branch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/sanitize"
)

// BenchmarkReplayPeakLiveHeap mirrors a replay of 50,000 ConfigMaps (20
// namespaces, three keys each: scenario K's largest step, rendered by
// sanitize as the stream renders them, without trees) through one worker
// on the go-git forge (local remote), with the default 8 MiB buffer: two
// windows, of about 32,400 and 17,600 objects, then the sweeps. It reports
// the largest live heap any collection found on the way (peak-live-MB),
// the live heap once Git holds everything (idle-live-MB) and the pack
// the remote keeps (pack-KB). Under Go's default GC the heap grows to
// twice what the last collection found live, so the operator's peak RSS
// follows peak-live-MB; run with GOGC=20 to sample the working set more
// finely. $GITOPS_REVERSER_HEAP_PROFILE_DIR receives replay-peak.pprof,
// written at each new peak, and replay-idle.pprof.
func BenchmarkReplayPeakLiveHeap(b *testing.B) {
	const n, namespaces, keys = 50000, 20, 3
	profiles := os.Getenv("GITOPS_REVERSER_HEAP_PROFILE_DIR")
	if profiles != "" {
		runtime.MemProfileRate = 4096
	}
	var peaks, idles, packs float64
	for i := range b.N {
		repo := fmt.Sprintf("bench-replay-peak-%d", i)
		_, err := git.CreateBareRepo(repo)
		require.NoError(b, err)
		sampler := startLiveHeapSampler(filepath.Join(profiles, "replay-peak.pprof"), profiles != "")
		w, stop := benchWorker(b, repo, 8<<20, nil)
		ctx := context.Background()
		names := make([][]string, namespaces)
		for i := range n {
			ns, name := fmt.Sprintf("scale-abcdef-ns-%02d", i%namespaces), fmt.Sprintf("scale-abcdef-cm-%05d", i)
			data := map[string]any{}
			for k := range keys {
				data[fmt.Sprintf("key-%d", k)] = fmt.Sprintf("initial value %d of %s", k, name)
			}
			content, err := sanitize.Render(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "1"}, "data": data}})
			require.NoError(b, err)
			require.NoError(b, w.Write(ctx, target, branch.Author{}, branch.Write{
				ID:   manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name},
				YAML: content, Replay: true, Received: time.Now()}))
			names[i%namespaces] = append(names[i%namespaces], name)
		}
		for i := range namespaces {
			sweep := &branch.Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: fmt.Sprintf("scale-abcdef-ns-%02d", i)}, Names: names[i]}
			require.NoError(b, w.Sync(ctx, target, sweep, i == namespaces-1))
		}
		names = nil
		require.NoError(b, w.Flush(ctx, target))
		peak := sampler.stop()
		runtime.GC()
		idle := liveHeap()
		if profiles != "" {
			writeHeapProfile(filepath.Join(profiles, "replay-idle.pprof"))
		}
		stop()
		peaks, idles = peaks+float64(peak)/1e6, idles+float64(idle)/1e6
		packs += float64(packKiB(b, repo))
	}
	b.ReportMetric(peaks/float64(b.N), "peak-live-MB")
	b.ReportMetric(idles/float64(b.N), "idle-live-MB")
	b.ReportMetric(packs/float64(b.N), "pack-KB")
}

// liveHeapSampler reads the live heap the last collection found, every
// millisecond, and keeps the largest.
type liveHeapSampler struct {
	peak atomic.Uint64
	done chan struct{}
	quit chan struct{}
}

func startLiveHeapSampler(profile string, profiling bool) *liveHeapSampler {
	s := &liveHeapSampler{done: make(chan struct{}), quit: make(chan struct{})}
	go func() {
		defer close(s.done)
		var profiled uint64
		ticker := time.NewTicker(time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-ticker.C:
			}
			live := liveHeap()
			if live <= s.peak.Load() {
				continue
			}
			s.peak.Store(live)
			if profiling && live > profiled+512<<10 {
				profiled = live
				writeHeapProfile(profile)
			}
		}
	}()
	return s
}

func (s *liveHeapSampler) stop() uint64 {
	close(s.quit)
	<-s.done
	return s.peak.Load()
}

// liveHeap is the heap the last collection marked live.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close() //nolint:errcheck // a benchmark's profile
	_ = pprof.Lookup("heap").WriteTo(f, 0)
}

// packKiB is what the remote repository's packs hold, as git
// count-objects reports it.
func packKiB(b *testing.B, repo string) int {
	b.Helper()
	out, err := git.Git(repo, "count-objects", "-v")
	require.NoError(b, err)
	for _, line := range strings.Split(out, "\n") {
		if size, found := strings.CutPrefix(line, "size-pack: "); found {
			kib, err := strconv.Atoi(strings.TrimSpace(size))
			require.NoError(b, err)
			return kib
		}
	}
	b.Fatalf("git count-objects -v: no size-pack in %q", out)
	return 0
}
