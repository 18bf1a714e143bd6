package branch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	simgithub "github.com/configbutler/gitops-reverser/test/sim/github"
)

// restartCase is what differs in the cluster when the operator comes back
// to a branch holding cm-0..cm-5 at value "1": its replay then arrives in
// two windows, cm-0..cm-3 (the first closes at the buffer bound and is
// planned before the rest arrives) and the others with the sweep.
type restartCase struct {
	name string
	// values are the replayed values that differ from "1", by object.
	values map[int]string
	// gone is an object deleted while the operator was down, -1 for none.
	gone int
	// reads and parses are the blobs read and documents parsed to load and
	// keep the index; commit is the commit the replay adds ("" for none).
	reads, parses int
	commit        string
}

var restartCases = []restartCase{
	{name: "nothing changed", gone: -1},
	{name: "one object changed, in the second window", values: map[int]string{4: "2"}, gone: -1, reads: 1, parses: 1,
		commit: "Reconcile team/mirror with the cluster: 1 updated"},
	{name: "one object deleted while down", gone: 5, reads: 1, parses: 1,
		commit: "Reconcile team/mirror with the cluster: 1 deleted"},
}

const restartObjects = 6

// firstWindowBytes closes the replay's first window after cm-0..cm-3; the
// second, of two objects and the sweep, stays under it.
func firstWindowBytes() int {
	n := 0
	for i := range 4 {
		n += len(cm(fmt.Sprintf("cm-%d", i), "1").YAML)
	}
	return n
}

// replayInTwoWindows replays the cluster of tc into a worker that has just
// started: the first window is planned (the index loads then) before the
// second window's objects arrive, as a replay larger than
// --branch-buffer-max-size does.
func replayInTwoWindows(t *testing.T, w *branch.Worker, planned <-chan struct{}, tc restartCase) {
	t.Helper()
	ctx := context.Background()
	var present []manifest.ObjectID
	for i := range restartObjects {
		if i == tc.gone {
			continue
		}
		value := "1"
		if v, ok := tc.values[i]; ok {
			value = v
		}
		wr := cm(fmt.Sprintf("cm-%d", i), value)
		wr.Replay = true
		present = append(present, wr.ID)
		write(t, w, branch.Author{}, wr)
		if i == 3 {
			<-planned // the first window closed at the buffer bound and was planned
		}
	}
	require.NoError(t, w.Sync(ctx, target,
		&branch.Sweep{Scope: manifest.SweepScope{Kind: "ConfigMap", Namespace: "team"}, Present: present}, true))
	flush(t, w)
}

// plannedSignal sends on the channel for each window the worker plans.
func plannedSignal(t *testing.T, c *branch.Config) <-chan struct{} {
	planned := make(chan struct{}, 8)
	onOutcome(t, c, branch.OutcomePlanned, func(branch.Outcome) { planned <- struct{}{} })
	return planned
}

// On the go-git forge with a local remote: a restart whose replay
// arrives in two windows reads and parses only what differs, and commits
// what it committed before files could be pending.
func TestARestartReadsAndParsesOnlyWhatDiffersWhateverItsWindows(t *testing.T) {
	for _, tc := range restartCases {
		t.Run(tc.name, func(t *testing.T) {
			repo := "lazy-" + strings.ReplaceAll(tc.name, " ", "-")
			first := newWorker(t, repo, nil, nil)
			for i := range restartObjects {
				write(t, first, branch.Author{}, cm(fmt.Sprintf("cm-%d", i), "1"))
			}
			flush(t, first)
			before := commits(t, repo)

			counting := &blobCounting{}
			var planned <-chan struct{}
			w := startWorker(t, repo, func(f forges.Forge) forges.Forge { counting.Forge = f; return counting },
				func(c *branch.Config) { c.BufferMax = firstWindowBytes(); planned = plannedSignal(t, c) })
			replayInTwoWindows(t, w, planned, tc)

			require.Equal(t, int32(tc.reads), counting.reads.Load(), "blobs read")
			require.Equal(t, tc.parses, branch.IndexParses(w, target), "documents the index parsed")
			want := before
			if tc.commit != "" {
				want = append([]string{"GitOps Reverser|" + tc.commit}, before...)
			}
			require.Equal(t, want, commits(t, repo))
		})
	}
}

// On the GitHub simulator, where each blob is one request: a restart with
// nothing changed asks for no blob, one with a change for its file only.
func TestARestartOnGitHubAsksForTheBlobsOfWhatDiffersOnly(t *testing.T) {
	sim := startGitHubSim(t)
	for _, tc := range restartCases {
		t.Run(tc.name, func(t *testing.T) {
			name := "lazy-" + strings.ReplaceAll(tc.name, " ", "-")
			require.NoError(t, sim.CreateRepo(ghOwner, name, map[string]string{"README.md": "hello\n"}))
			onGitHub := func(forges.Forge) forges.Forge { return ghClient(t, sim, name) }
			first := runWorker(t, name, onGitHub, nil).w
			for i := range restartObjects {
				write(t, first, branch.Author{}, cm(fmt.Sprintf("cm-%d", i), "1"))
			}
			flush(t, first)
			head, err := sim.HeadCommit(ghOwner, name, "main")
			require.NoError(t, err)

			var planned <-chan struct{}
			from := sim.RequestCount()
			w := runWorker(t, name, onGitHub,
				func(c *branch.Config) { c.BufferMax = firstWindowBytes(); planned = plannedSignal(t, c) }).w
			replayInTwoWindows(t, w, planned, tc)

			require.Equal(t, tc.reads, blobReads(sim.Requests()[from:]), "blob requests")
			require.Equal(t, tc.parses, branch.IndexParses(w, target), "documents the index parsed")
			after, err := sim.HeadCommit(ghOwner, name, "main")
			require.NoError(t, err)
			require.Equal(t, tc.commit == "", after.SHA == head.SHA, "a commit only for what changed")
		})
	}
}

// blobReads counts the requests for one blob's content
// (GET /repos/{owner}/{repo}/git/blobs/{sha}).
func blobReads(reqs []simgithub.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Method == "GET" && strings.Contains(r.Path, "/git/blobs/") {
			n++
		}
	}
	return n
}
