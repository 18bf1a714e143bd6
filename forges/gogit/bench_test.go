package gogit

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/configbutler/gitops-reverser/gitfile"
)

// BenchmarkCommit measures one commit of 100 changed files, pushed with its
// compare-and-swap to the local HTTP server, on top of the worker's own
// previous commit (so nothing is fetched, as in steady state).
func BenchmarkCommit(b *testing.B) {
	const filesPerCommit = 100
	name := "bench-commit-" + strings.ToLower(rand.Text()[:8])
	head, err := shared.CreateRepoWithCommit(name, map[string]string{"README.md": "benchmark\n"})
	if err != nil {
		b.Fatal(err)
	}
	client, err := New(remotes()[0].options(name))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.Tree(ctx, head, ""); err != nil {
		b.Fatal(err)
	}
	changes := make([]gitfile.Change, filesPerCommit)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for f := range changes {
			changes[f] = gitfile.Change{
				Path:    fmt.Sprintf("clusters/prod/namespace-%d/configmap-%d.yaml", f%10, f),
				Content: fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  revision: \"%d\"\n", f, i),
			}
		}
		result, err := client.Commit(ctx, commitRequest("main", head, fmt.Sprintf("revision %d", i), changes...))
		if err != nil {
			b.Fatal(err)
		}
		head = result.Commit
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*filesPerCommit), "ns/file")
}
