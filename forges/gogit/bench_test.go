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

// BenchmarkFetchTree measures a restart's read: a fresh client lists a
// snapshot of 2,000 similar ConfigMaps (one depth-1 fetch), holding every
// blob ("held", as the worker does after a restart with nothing changed)
// or none. B/op is what the fetch allocates; the store then keeps the
// trees only in the held case.
func BenchmarkFetchTree(b *testing.B) {
	const files = 2000
	contents := map[string]string{}
	for f := range files {
		contents[fmt.Sprintf("clusters/prod/namespace-%d/configmap-%d.yaml", f%20, f)] =
			fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: namespace-%d\ndata:\n  key: value-%d\n", f, f%20, f)
	}
	name := "bench-fetch-" + strings.ToLower(rand.Text()[:8])
	head, err := shared.CreateRepoWithCommit(name, contents)
	if err != nil {
		b.Fatal(err)
	}
	held := map[string][]byte{}
	for _, c := range contents {
		held[gitfile.BlobID([]byte(c), head)] = []byte(c)
	}
	ctx := context.Background()
	for _, holding := range []bool{false, true} {
		b.Run(map[bool]string{false: "none-held", true: "held"}[holding], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				client, err := New(remotes()[0].options(name))
				if err != nil {
					b.Fatal(err)
				}
				if holding {
					client.HoldBlobs(func(id string) ([]byte, bool) { c, ok := held[id]; return c, ok })
				}
				entries, err := client.Tree(ctx, head, "")
				if err != nil || len(entries) != files {
					b.Fatalf("%d entries, %v", len(entries), err)
				}
			}
		})
	}
}
