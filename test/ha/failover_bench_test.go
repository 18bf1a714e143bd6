package ha

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// failoverRuns is how many SIGKILLs (and as many SIGTERMs) one iteration
// of BenchmarkFailover makes: its max is the p99 the target names.
const failoverRuns = 10

// BenchmarkFailover times issue 24's two handovers on the fixture of
// test/ha (three operator processes, six branches, commit window 300 ms,
// controller-runtime's Lease cadence), failoverRuns times each:
//
//   - crash: the owner of a branch is SIGKILLed and a change is made to
//     each of its branches at once; the figure runs from the kill to the
//     first of those changes in Git (another replica's commit: the killed
//     one is dead). It also logs when a survivor set the branch's claim,
//     which splits the figure into the Lease and claim running out and
//     the new owner's start. The killed replica then starts again under
//     its name, as a StatefulSet's pod would.
//   - graceful: the owner of another branch is sent SIGTERM; the figure
//     runs to the survivors holding every claim as rendezvous over the two
//     gives them (its process has exited by then). It then starts again.
//
// It reports the p50 and max of both in seconds (crash_p50_s, crash_max_s,
// graceful_p50_s, graceful_max_s) and of the claim-set-to-commit part
// (claim_to_commit_p50_s, claim_to_commit_max_s).
func BenchmarkFailover(b *testing.B) {
	const name, prefix = "bench", "ha-bench:"
	members := []string{"op-0", "op-1", "op-2"}
	s := newSpread(b, name, prefix, 6)
	events := s.watchClaims(b)
	c := newCluster(b, name+"-system", prefix, len(members))
	for _, id := range members {
		c.start(b, id)
	}
	f := &failovers{b: b, s: s, c: c, events: events, members: members}
	for range b.N {
		for run := range failoverRuns {
			f.crash(run)
			f.graceful(run)
		}
	}
	for _, fig := range []struct {
		name string
		of   []time.Duration
	}{{"crash", f.crashes}, {"graceful", f.handovers}, {"claim_to_commit", f.starts}} {
		if len(fig.of) == 0 {
			continue
		}
		b.ReportMetric(median(fig.of).Seconds(), fig.name+"_p50_s")
		b.ReportMetric(slices.Max(fig.of).Seconds(), fig.name+"_max_s")
	}
	b.Logf("crash failover over %d kills: p50 %s, max %s; graceful handover over %d stops: p50 %s, max %s",
		len(f.crashes), median(f.crashes), slices.Max(f.crashes), len(f.handovers), median(f.handovers), slices.Max(f.handovers))
}

// failovers is what BenchmarkFailover's rounds share and collect.
type failovers struct {
	b       *testing.B
	s       *spread
	c       *cluster
	events  *claimEvents
	members []string
	// crashes run from a SIGKILL to the first commit by another replica,
	// starts from a survivor setting that branch's claim to that commit,
	// handovers from a SIGTERM to the survivors holding every claim.
	crashes, starts, handovers []time.Duration
}

// crash SIGKILLs the owner of the run-th branch (of six) and times the
// first commit of a change made right after; the replica starts again.
func (f *failovers) crash(run int) {
	b := f.b
	holders := waitSettled(b, f.c, f.s, f.members)
	victim := identityOf(holders[f.s.branches[run%len(f.s.branches)].key])
	lost := holders.ownedBy(f.s, victim)
	value := fmt.Sprintf("kill-%d", run)
	mark := f.events.mark()
	killed := time.Now()
	f.c.get(victim).kill()
	for _, m := range lost {
		setValue(b, m, value)
	}
	first, at := f.firstInGit(lost, value)
	f.crashes = append(f.crashes, at.Sub(killed))
	taken := f.events.firstAt(mark, first.key, "set")
	if !taken.IsZero() {
		f.starts = append(f.starts, at.Sub(taken))
	}
	b.Logf("kill %d of %s (%d branches): first commit %s after it, on %s; its claim set by a survivor %s after the kill",
		run+1, victim, len(lost), at.Sub(killed).Round(10*time.Millisecond), first.branch, taken.Sub(killed).Round(10*time.Millisecond))
	f.c.start(b, victim)
}

// graceful SIGTERMs the owner of a branch three away from the crash's and
// times the survivors settling; the replica starts again.
func (f *failovers) graceful(run int) {
	b := f.b
	holders := waitSettled(b, f.c, f.s, f.members)
	victim := identityOf(holders[f.s.branches[(run+3)%len(f.s.branches)].key])
	handed := holders.ownedBy(f.s, victim)
	value := fmt.Sprintf("term-%d", run)
	for _, m := range handed {
		setValue(b, m, value)
	}
	r := f.c.get(victim)
	stopped := time.Now()
	r.terminate(b)
	settledAt := f.settledAt(without(f.members, victim))
	f.handovers = append(f.handovers, settledAt.Sub(stopped))
	b.Logf("stop %d of %s (%d branches): the survivors held every claim %s after SIGTERM",
		run+1, victim, len(handed), settledAt.Sub(stopped).Round(10*time.Millisecond))
	for _, m := range handed {
		f.s.waitInGit(b, f.c, m, value) // nothing the stopping replica held was lost
	}
	f.c.start(b, victim)
}

// firstInGit waits until value is in Git on one of branches, polling every
// 50 ms, and returns that branch and when it was seen.
func (f *failovers) firstInGit(branches []mirrored, value string) (mirrored, time.Time) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(patience)
	for {
		for _, m := range branches {
			if f.s.inGit(m, value) {
				return m, time.Now()
			}
		}
		select {
		case <-deadline:
			f.b.Fatalf("%q reached none of %d branches; %s", value, len(branches), f.c.logs())
		case <-tick.C:
		}
	}
}

// settledAt waits, looking every 50 ms, until members settle (exactly they
// run, every claim held as rendezvous over them gives it) and returns when.
func (f *failovers) settledAt(members []string) time.Time {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(patience)
	for {
		_, why := checkSettled(context.Background(), f.c, f.s, members)
		if why == "" {
			return time.Now()
		}
		select {
		case <-deadline:
			require.FailNow(f.b, "the survivors never settled", "%s; %s", why, f.c.logs())
		case <-tick.C:
		}
	}
}

// median of ds (the mean of the middle two for an even count).
func median(ds []time.Duration) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
