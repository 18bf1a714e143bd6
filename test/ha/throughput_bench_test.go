package ha

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

// Throughput's workload: throughputBranches branches, each written once
// per throughputPeriod for throughputDuration, by one writer per branch.
const (
	throughputBranches = 30
	throughputPeriod   = 3 * time.Second
	throughputDuration = 30 * time.Second
)

// BenchmarkThroughputByReplicas runs issue 24's scaling figure: 30
// branches (test/ha's fixture: one GitTarget, namespace and ConfigMap
// WatchRule each, commit window 300 ms, the go-git forge against `git
// http-backend`) under a sustained 10 changes/s (one per branch every 3 s,
// for 30 s), with 1, 2 and 3 operator processes sharing them. Each
// count is a fresh repository, namespace set and replica set. It reports:
//
//   - catchup_s: from the last write to every branch holding its last
//     value in Git;
//   - changes_per_s: the changes made over the time from the first write
//     to that moment (what the replicas sustained end to end);
//   - commits: commits the run added over all branches;
//   - cpu_s: CPU seconds the replicas spent over the run, summed
//     (process_cpu_seconds_total), a figure the machine's load does not
//     move the way wall time does.
//
// The replicas run in HA mode whatever their number (the journal
// included), so the counts differ only in how many processes share the
// branches.
func BenchmarkThroughputByReplicas(b *testing.B) {
	round := 0
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			for range b.N {
				round++
				runThroughput(b, n, round)
			}
		})
	}
}

// runThroughput is one run of BenchmarkThroughputByReplicas with n
// replicas.
func runThroughput(b *testing.B, n, round int) {
	name := fmt.Sprintf("tput-%d-%d", n, round)
	prefix := name + ":"
	s := newSpread(b, name, prefix, throughputBranches)
	members := make([]string, n)
	// The cluster says three replicas to every process, so one and two
	// run as HA members too (journal, claims) rather than as the single
	// elected replica.
	c := newCluster(b, name+"-system", prefix, 3)
	for i := range members {
		members[i] = fmt.Sprintf("op-%d", i)
		c.start(b, members[i])
	}
	waitSettled(b, c, s, members)
	for _, m := range s.branches {
		setValue(b, m, "start")
	}
	for _, m := range s.branches {
		s.waitInGit(b, c, m, "start")
	}
	ctx := context.Background()
	cpuBefore := replicasCPU(b, ctx, c, members)
	commitsBefore := s.commits(b)

	b.ResetTimer()
	start := time.Now()
	last := writeSteadily(b, s)
	lastWrite := time.Now()
	caughtUp := s.waitAllInGit(b, c, last)
	b.StopTimer()

	total := 0
	for _, v := range last {
		k, err := strconv.Atoi(strings.TrimPrefix(v, "v-"))
		require.NoError(b, err)
		total += k + 1
	}
	cpu := replicasCPU(b, ctx, c, members) - cpuBefore
	commits := s.commits(b) - commitsBefore
	b.ReportMetric(caughtUp.Sub(lastWrite).Seconds(), "catchup_s")
	b.ReportMetric(float64(total)/caughtUp.Sub(start).Seconds(), "changes_per_s")
	b.ReportMetric(float64(commits), "commits")
	b.ReportMetric(cpu, "cpu_s")
	b.Logf("%d replicas: %d changes on %d branches in %s, Git caught up %s after the last; %d commits; %.1f CPU s",
		n, total, len(s.branches), lastWrite.Sub(start).Round(100*time.Millisecond),
		caughtUp.Sub(lastWrite).Round(100*time.Millisecond), commits, cpu)
}

// writeSteadily writes every branch's probe once per throughputPeriod for
// throughputDuration, one writer per branch, and returns each branch's
// last value.
func writeSteadily(b *testing.B, s *spread) []string {
	last := make([]string, len(s.branches))
	errs := make([]error, len(s.branches))
	var wg sync.WaitGroup
	for i, m := range s.branches {
		wg.Go(func() {
			tick := time.NewTicker(throughputPeriod)
			defer tick.Stop()
			stop := time.After(throughputDuration)
			for k := 0; ; k++ {
				value := "v-" + strconv.Itoa(k)
				if errs[i] = writeValue(m, value); errs[i] != nil {
					return
				}
				last[i] = value
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(b, err, "writing %s", s.branches[i].ns)
	}
	return last
}

// waitAllInGit waits until every branch holds its value in last and
// returns when the last of them was first seen to. The repository is read
// in process (go-git on the bare repository): a git process per branch per
// look would itself take seconds on a busy machine, and the figure would
// be the poller's.
func (s *spread) waitAllInGit(b *testing.B, c *cluster, last []string) time.Time {
	done := make([]bool, len(s.branches))
	remaining := len(s.branches)
	var at time.Time
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(patience)
	for remaining > 0 {
		look := time.Now()
		repo, err := gogit.PlainOpen(env.git.RepoPath(s.repo))
		require.NoError(b, err)
		for i, m := range s.branches {
			if !done[i] && probeHolds(repo, m, last[i]) {
				done[i], at = true, look
				remaining--
			}
		}
		if remaining == 0 {
			break
		}
		select {
		case <-deadline:
			b.Fatalf("%d branches never caught up; %s", remaining, c.logs())
		case <-tick.C:
		}
	}
	return at
}

// probeHolds reports whether m's branch holds the probe ConfigMap with
// value (inGit, read in process).
func probeHolds(repo *gogit.Repository, m mirrored, value string) bool {
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(m.branch), true)
	if err != nil {
		return false
	}
	commit, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return false
	}
	file, err := commit.File(m.probeFile())
	if err != nil {
		return false
	}
	content, err := file.Contents()
	return err == nil && holdsValue(content, value)
}

// replicasCPU sums the replicas' process_cpu_seconds_total.
func replicasCPU(b *testing.B, ctx context.Context, c *cluster, members []string) float64 {
	total := 0.0
	for _, id := range members {
		v, err := c.get(id).metric(ctx, "process_cpu_seconds_total")
		require.NoError(b, err)
		total += v
	}
	return total
}

// commits counts the commits of every branch of the spread.
func (s *spread) commits(b *testing.B) int {
	total := 0
	for _, m := range s.branches {
		out, err := env.git.Git(s.repo, "rev-list", "--count", "refs/heads/"+m.branch)
		require.NoError(b, err)
		k, err := strconv.Atoi(strings.TrimSpace(out))
		require.NoError(b, err)
		total += k
	}
	return total
}
