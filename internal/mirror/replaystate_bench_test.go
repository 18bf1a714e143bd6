package mirror

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/rules"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// replayStateObjects is the scale of scenario K's largest step (50k
// ConfigMaps, docs/benchmarks.md "K: memory at scale").
const replayStateObjects = 50_000

// discardingSink takes writes and sweeps and keeps nothing but the last
// sweep, so what stays on the heap is the stream's own state.
type discardingSink struct{ sweep *branch.Sweep }

func (s *discardingSink) Write(context.Context, branch.TargetKey, branch.Author, branch.Write) error {
	return nil
}

func (s *discardingSink) Sync(_ context.Context, _ branch.TargetKey, sweep *branch.Sweep, _ bool) error {
	s.sweep = sweep
	return nil
}

func (s *discardingSink) WhenSettled(_ context.Context, _ branch.TargetKey, fn func(head string)) error {
	fn("")
	return nil
}

func (s *discardingSink) HoldsCommit(context.Context, string) (bool, error) { return true, nil }

// replayedConfigMap is a ConfigMap as a watch decodes it: its name and
// namespace are strings of their own, as JSON decoding makes them.
func replayedConfigMap(i int) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"data": map[string]any{"key": fmt.Sprintf("value-%d", i)}}}
	obj.SetNamespace(strings.Clone("scale"))
	obj.SetName(fmt.Sprintf("cm-%05d", i))
	return obj
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkReplayStateBytesPerObject is the heap a stream keeps per
// object of a 50k-object replay: what it remembers it wrote (emitted),
// and the present set it hands the worker as the sweep (held by the sink
// here as the worker holds it). HeapAlloc after a GC, before and after, so
// the figure does not move with the machine's load.
func BenchmarkReplayStateBytesPerObject(b *testing.B) {
	ctx := context.Background()
	claim := rules.Claim{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespace: "scale"}
	for b.Loop() {
		sink := &discardingSink{}
		target := &Target{Key: branch.TargetKey{Namespace: "team", Name: "mirror"}, ctx: ctx, sink: sink, observer: nopObserver{},
			streams: map[claimKey]*running{{claim.GVR, claim.Namespace}: {claim: claim}}}
		glue := &streamGlue{target: target, claim: claim}
		before := liveHeap()
		if err := glue.handle(ctx, watch.Event{Kind: watch.ReplayStart}); err != nil {
			b.Fatal(err)
		}
		for i := range replayStateObjects {
			if err := glue.handle(ctx, watch.Event{Kind: watch.Upsert, Replay: true, Object: replayedConfigMap(i)}); err != nil {
				b.Fatal(err)
			}
		}
		if err := glue.handle(ctx, watch.Event{Kind: watch.Synced}); err != nil {
			b.Fatal(err)
		}
		after := liveHeap()
		b.ReportMetric(float64(after-before)/replayStateObjects, "B/object")
		glue.emitted.reset()
		withoutEmitted := liveHeap()
		b.ReportMetric(float64(after-withoutEmitted)/replayStateObjects, "emitted-B/object")
		b.ReportMetric(float64(withoutEmitted-before)/replayStateObjects, "present-B/object")
		runtime.KeepAlive(glue)
		runtime.KeepAlive(sink.sweep)
	}
}
