package branch

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/configbutler/gitops-reverser/internal/manifest"
)

// replayObjects is the scale of scenario K's largest step (50k ConfigMaps,
// docs/benchmarks.md "K: memory at scale").
const replayObjects = 50_000

func heapNow() (live, allocated uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.TotalAlloc
}

// BenchmarkReplayWindowsBytesPerObject is what the core holds per object
// of a 50k-object replay before any of it is committed: the windows the
// replay fills (8 MiB each, the default buffer) and the sweep they carry
// on. Each write's YAML shares one backing array, so the figure is the
// core's own per-write structure and the identities' strings, not the
// rendered bytes. live is HeapAlloc after a GC, before and after;
// allocated is every byte allocated on the way (TotalAlloc), the
// transient copies included. Neither moves with the machine's load.
func BenchmarkReplayWindowsBytesPerObject(b *testing.B) {
	yaml := []byte(strings.Repeat("x", 400)) // a ConfigMap's rendering, roughly
	scope := manifest.SweepScope{Kind: "ConfigMap", Namespace: "scale"}
	for b.Loop() {
		c := testCore(func(c *CoreConfig) { c.BufferMax = 8 << 20 })
		liveBefore, allocBefore := heapNow()
		names := make([]string, 0, replayObjects)
		for i := range replayObjects {
			id := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps",
				Namespace: strings.Clone("scale"), Name: fmt.Sprintf("cm-%05d", i)}
			names = append(names, id.Name)
			c.Step(t0, WriteEvent{Target: coreTo, Author: ops, Write: Write{ID: id, YAML: yaml, Replay: true}})
		}
		c.Step(t0, SyncEvent{Target: coreTo, Sweep: &Sweep{Scope: scope, Names: names}, CloseWindow: true})
		liveAfter, allocAfter := heapNow()
		if len(c.held()) < 2 {
			b.Fatalf("the replay filled %d windows; it should fill several", len(c.held()))
		}
		b.ReportMetric(float64(liveAfter-liveBefore)/replayObjects, "live-B/object")
		b.ReportMetric(float64(allocAfter-allocBefore)/replayObjects, "allocated-B/object")
		runtime.KeepAlive(c)
	}
}

// BenchmarkJournalSweepBytesPerObject is the size of a 50k-object replay's
// sweep as a journal entry, per object: by name (what a stream hands on
// now) and by whole identity (what a version 1 entry held). Bytes, so the
// figure does not move with the machine's load.
func BenchmarkJournalSweepBytesPerObject(b *testing.B) {
	scope := manifest.SweepScope{Kind: "ConfigMap", Namespace: "scale"}
	var byName, byID Sweep
	byName.Scope, byID.Scope = scope, scope
	for i := range replayObjects {
		id := manifest.ObjectID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "scale", Name: fmt.Sprintf("cm-%05d", i)}
		byName.Names = append(byName.Names, id.Name)
		byID.Present = append(byID.Present, id)
	}
	for b.Loop() {
		for unit, sweep := range map[string]*Sweep{"by-name-B/object": &byName, "by-identity-B/object": &byID} {
			data, _, err := EncodeJournal(JournalRecord{At: t0, Event: SyncEvent{Target: coreTo, Sweep: sweep, CloseWindow: true}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(data))/replayObjects, unit)
		}
	}
}
