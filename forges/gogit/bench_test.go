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
// snapshot of 2,000 similar ConfigMaps (one depth-1 fetch). From a server
// without filters ("no-filters") the fetch brings every blob, and the
// client holds all of them ("held", as the worker does after a restart
// with nothing changed) or none; from one that allows them ("filters",
// uploadpack.allowFilter) it brings the commit and the trees only.
// "filters/tree+blob" then reads one file, which fetches the snapshot
// again with its blobs: the cost of a restart that does read a file.
// B/op is what the client allocates; pack-B/op and objects/op are what
// the server sent.
func BenchmarkFetchTree(b *testing.B) {
	const files = 2000
	contents := manyFiles(files)
	cases := []struct {
		name          string
		server        *testServer
		holding, read bool
	}{
		{name: "no-filters/none-held", server: withoutFilters},
		{name: "no-filters/held", server: withoutFilters, holding: true},
		{name: "filters/none-held", server: shared},
		{name: "filters/tree+blob", server: shared, read: true},
	}
	ctx := context.Background()
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			name := "bench-fetch-" + strings.ToLower(rand.Text()[:8])
			head, err := bc.server.CreateRepoWithCommit(name, contents)
			if err != nil {
				b.Fatal(err)
			}
			// Packed, as a pushed snapshot is on a server (receive-pack keeps
			// a push of more than transfer.unpackLimit objects as a pack):
			// 2,000 loose objects cost upload-pack a file each.
			if _, err := bc.server.Git(name, "repack", "-a", "-d", "-q"); err != nil {
				b.Fatal(err)
			}
			held := map[string][]byte{}
			for _, c := range contents {
				held[gitfile.BlobID([]byte(c), head)] = []byte(c)
			}
			b.ReportAllocs()
			var packBytes, objects int64
			for b.Loop() {
				client, err := New(remotesOf(bc.server)[0].options(name))
				if err != nil {
					b.Fatal(err)
				}
				if bc.holding {
					client.HoldBlobs(func(id string) ([]byte, bool) { c, ok := held[id]; return c, ok })
				}
				entries, err := client.Tree(ctx, head, "")
				if err != nil || len(entries) != files {
					b.Fatalf("%d entries, %v", len(entries), err)
				}
				if bc.read {
					if _, err := client.Blob(ctx, entries[0].BlobID); err != nil {
						b.Fatal(err)
					}
				}
				packBytes += client.fetchedBytes
				objects += client.fetchedObjects
			}
			b.ReportMetric(float64(packBytes)/float64(b.N), "pack-B/op")
			b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
		})
	}
}
