package manifest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"testing"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

const memoryObjects = 20000

// liveHeap is the heap the last full collection found reachable.
func liveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// BenchmarkIndexMemory is what the index keeps per document for a subtree
// of 20,000 one-document files (ConfigMaps of about 470 bytes): the live
// heap it adds, file contents included (index-B/doc), once loaded
// ("loaded"), after a commit of rendered writes has rewritten every
// document ("committed": the steady state, the index then holds what the
// plans made), and after such a commit into documents a person formatted
// (a comment kept by the in-place editor), whose parse the index keeps
// ("formatted"). The branch's blob cache holds the same file contents as
// far as its size allows; here they count as the index's.
func BenchmarkIndexMemory(b *testing.B) {
	for _, stage := range []string{"loaded", "committed", "formatted"} {
		b.Run(stage, func(b *testing.B) {
			var perDoc float64
			for b.Loop() {
				base := liveHeap()
				ix := memoryIndex(b, stage)
				perDoc = float64(liveHeap()-base) / memoryObjects
				writeHeapProfile(b, stage)
				runtime.KeepAlive(ix)
			}
			b.ReportMetric(perDoc, "index-B/doc")
		})
	}
}

func memoryIndex(b *testing.B, stage string) *manifest.Index {
	files := benchFiles(b, memoryObjects, func(text []byte) []byte {
		if stage != "formatted" {
			return text
		}
		return bytes.Replace(text, []byte("kind: ConfigMap\n"), []byte("kind: ConfigMap # kept by hand\n"), 1)
	})
	ix, err := manifest.NewIndex(".", files)
	if err != nil {
		b.Fatal(err)
	}
	if stage == "loaded" {
		return ix
	}
	ops := renderedOps(b, benchUpsertsOf(memoryObjects, "app", "2"), true)
	result, err := manifest.Plan(ix, ops)
	if err != nil || len(result.Changes) != memoryObjects+1 {
		b.Fatalf("planned %d changes: %v", len(result.Changes), err)
	}
	if err := ix.Apply(result); err != nil {
		b.Fatal(err)
	}
	return ix
}

// writeHeapProfile writes the live heap, index and all, to
// $GITOPS_REVERSER_HEAP_PROFILE_DIR/index-<stage>.pprof when that is set
// (run with -test.memprofilerate=512 for a fine profile).
func writeHeapProfile(b *testing.B, stage string) {
	dir := os.Getenv("GITOPS_REVERSER_HEAP_PROFILE_DIR")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, "index-"+stage+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
