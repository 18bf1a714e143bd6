package bench

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/forges/gogit"
	"github.com/configbutler/gitops-reverser/gitfile"
)

// commitPathSizes are the commit sizes BenchmarkGiteaCommitPaths times,
// in files, by the number of files in the repository.
var commitPathSizes = map[int][]int{
	10:   {1, 10},
	2000: {1, 10, 50, 100, 300, 1000, 2000},
}

// commitPathRepeats is how many times a commit of at most 100 files is
// timed; the median is reported. Larger ones are timed once.
const commitPathRepeats = 3

// BenchmarkGiteaCommitPaths times one commit of n changed files into a
// 2,000-file repository through the two ways to write to Gitea: its
// contents API (ChangeFiles on a scratch branch, then the guarded branch
// move: the gitea forge) and a push over smart HTTP with the same token
// (the git forge), once on a head the pushing client holds (its own last
// commit) and once on a head it must fetch first (after a commit made
// through the API). The figures decide which commits the gitea forge
// pushes (docs/forges.md).
func BenchmarkGiteaCommitPaths(b *testing.B) {
	for _, repoFiles := range []int{10, 2000} {
		b.Run(fmt.Sprintf("repository-of-%d", repoFiles), func(b *testing.B) { timeCommitPaths(b, repoFiles) })
	}
}

func timeCommitPaths(b *testing.B, repoFiles int) {
	e := sharedEnv(b)
	ctx := context.Background()
	g, err := e.giteaServer()
	require.NoError(b, err)
	name := uniqueName("commit-paths")
	api, err := g.probeClient(name, nil)
	require.NoError(b, err)
	url := g.server.HTTPCloneURL(g.server.AdminUser(), name)
	auth := gogit.BasicAuth{Username: g.server.AdminUser(), Password: g.server.Token()}
	push, err := gogit.New(gogit.Options{URL: url, Auth: auth})
	require.NoError(b, err)

	head, err := push.Head(ctx, "main")
	require.NoError(b, err)
	blobs := map[string]string{} // what each measured path holds at head, as the branch worker knows it
	head = commitFiles(b, push, head, repoFiles, "seed", blobs)
	r := newReporter(b, fmt.Sprintf("Gitea commit paths, %d-file repository", repoFiles), forgeGitea)
	for _, n := range commitPathSizes[repoFiles] {
		repeats := 1
		if n <= 100 {
			repeats = commitPathRepeats
		}
		var viaAPI, fetchPush, heldPush []time.Duration
		for i := range repeats {
			var took time.Duration
			head, took = timedCommit(b, api, head, n, fmt.Sprintf("api-%d-%d", n, i), blobs)
			viaAPI = append(viaAPI, took)
			// The push client last saw its own commit, not the API's: this
			// push fetches the head's snapshot first.
			head, took = timedCommit(b, push, head, n, fmt.Sprintf("fetch-push-%d-%d", n, i), blobs)
			fetchPush = append(fetchPush, took)
			head, took = timedCommit(b, push, head, n, fmt.Sprintf("push-%d-%d", n, i), blobs)
			heldPush = append(heldPush, took)
		}
		r.info(fmt.Sprintf("%4d files: contents API", n), seconds(percentile(viaAPI, 50)), "s")
		r.info(fmt.Sprintf("%4d files: fetch and push", n), seconds(percentile(fetchPush, 50)), "s")
		r.info(fmt.Sprintf("%4d files: push on a held head", n), seconds(percentile(heldPush, 50)), "s")
	}
}

// timedCommit commits n changed files on head and returns the new head
// and how long the commit took.
func timedCommit(b *testing.B, f forges.Forge, head string, n int, value string, blobs map[string]string) (string, time.Duration) {
	b.Helper()
	start := time.Now()
	next := commitFiles(b, f, head, n, value, blobs)
	return next, time.Since(start)
}

// commitFiles writes files 0..n-1 of the measured directory with value,
// each on the blob blobs says it holds at head, and brings blobs forward.
func commitFiles(b *testing.B, f forges.Forge, head string, n int, value string, blobs map[string]string) string {
	b.Helper()
	changes := make([]gitfile.Change, n)
	for i := range changes {
		path := fmt.Sprintf("clusters/paths/configmaps/cm-%04d.yaml", i)
		changes[i] = gitfile.Change{Path: path, BaseBlob: blobs[path],
			Content: fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\ndata:\n  key-0: %s\n", i, value)}
	}
	author := forges.Signature{Name: "Benchmark", Email: "bench@example.invalid", When: time.Now()}
	res, err := f.Commit(context.Background(), forges.CommitRequest{Branch: "main", ExpectedHead: head, Message: value,
		Author: author, Committer: author, Changes: changes})
	require.NoError(b, err, "commit %s", value)
	maps.Copy(blobs, res.Blobs)
	return res.Commit
}
