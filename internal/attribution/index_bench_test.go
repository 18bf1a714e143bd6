package attribution

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// BenchmarkIndexMemory applies 100,000 facts shaped like the ingress's
// (uuid audit ids and uids, numeric resourceVersions, OIDC actors with
// groups, spread over four types and twenty namespaces) to one Index and
// reports the live heap it then holds, after a GC, as MiB/100k-facts; the
// issue's target is 30 MiB. The facts are built batch by batch, as the
// follower decodes them, so the strings the index keeps are counted.
func BenchmarkIndexMemory(b *testing.B) {
	const total, batch = 100_000, 400
	streams := []facts.StreamKey{
		{Route: "default", Resource: "configmaps"},
		{Route: "default", Resource: "secrets"},
		{Route: "default", Group: "apps", Resource: "deployments"},
		{Route: "default", Resource: "services"},
	}
	var perIndex float64
	for b.Loop() {
		before := liveHeap()
		x := &Index{Clock: clocktesting.NewFakeClock(t0), MaxTotal: total, MaxPerStream: total}
		for n := 0; n < total; n += batch {
			stream := streams[(n/batch)%len(streams)]
			x.Apply(stream, realisticFacts(n, batch))
		}
		perIndex = float64(liveHeap()-before) / (1 << 20)
		if x.Len() != total {
			b.Fatalf("index holds %d facts, want %d", x.Len(), total)
		}
		runtime.KeepAlive(x)
	}
	b.ReportMetric(perIndex, "MiB/100k-facts")
}

// realisticFacts are count facts starting at the n-th, each with strings
// of its own, as JSON decoding produces them.
func realisticFacts(n, count int) []facts.Fact {
	verbs := []string{"update", "patch", "patch", "create", "delete"}
	fs := make([]facts.Fact, 0, count)
	for i := n; i < n+count; i++ {
		f := facts.Fact{
			AuditID:         fmt.Sprintf("%08x-1f2e-4d3c-9b8a-%012x", i, i*7919),
			Version:         "v1",
			Verb:            verbs[i%len(verbs)],
			Namespace:       fmt.Sprintf("team-%02d", i%20),
			Name:            fmt.Sprintf("app-config-%06d", i),
			UID:             fmt.Sprintf("%08x-6b1d-4f0e-a2c3-%012x", i*31, i),
			ResourceVersion: fmt.Sprintf("%d", 48_000_000+i),
			Actor: facts.Actor{
				Username:    fmt.Sprintf("user%03d@example.com", i%200),
				Groups:      []string{"system:authenticated", fmt.Sprintf("oidc:team-%02d", i%20)},
				DisplayName: fmt.Sprintf("User %03d", i%200),
				Email:       fmt.Sprintf("user%03d@example.com", i%200),
			},
			Stage: t0.Add(-time.Duration(count-i%count) * time.Millisecond),
		}
		fs = append(fs, f)
	}
	return fs
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
