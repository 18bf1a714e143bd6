package ha

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/ha"
)

// TestThreeReplicasShareTheBranchesAndHandThemOver runs three operator
// processes on six branches of one repository, then kills one, stops one
// gracefully and starts it again, cuts one off from Redis and lets it
// back, and scales to one replica and back to three. Each step needs the one before, so they
// are one test; a step that fails ends it.
func TestThreeReplicasShareTheBranchesAndHandThemOver(t *testing.T) {
	const name, prefix = "spread", "ha-spread:"
	members := []string{"op-0", "op-1", "op-2"}
	s := newSpread(t, name, prefix, 6)
	// The steps below need every replica to own a branch of its own among
	// three; rendezvous hashing is deterministic, so this holds for these
	// names or never.
	for _, id := range members {
		require.True(t, slices.ContainsFunc(s.branches, func(m mirrored) bool { return ha.Owner(members, m.key) == id }),
			"rendezvous gives %s none of the branches: rename them", id)
	}
	events := s.watchClaims(t)
	c := newCluster(t, name+"-system", prefix, len(members))
	for _, id := range members {
		c.start(t, id)
	}
	st := &steps{t: t, s: s, c: c, events: events, members: members}
	for _, step := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"every branch is claimed by exactly one replica", st.spreadOverThree},
		{"a killed owner's branch moves on through another replica", st.killAnOwner},
		{"a stopping replica hands its branches over", st.stopOneGracefully},
		{"a returning replica takes back only what rendezvous gives it", st.startItAgain},
		{"a replica cut off from Redis gives its branches up before another takes them", st.cutOffFromRedis},
		{"Redis down for every replica: the owners run on from memory and keep their claims", st.redisDownForAll},
		{"scaling 3 to 1 to 3 moves only the branches it must", st.scaleToOneAndBack},
	} {
		if !t.Run(step.name, step.run) {
			return
		}
	}
}

// steps is the state the steps pass on.
type steps struct {
	t       *testing.T
	s       *spread
	c       *cluster
	events  *claimEvents
	members []string // the replicas that should be running
	// stopped is the replica the graceful step stopped.
	stopped string
}

// spreadOverThree: every branch claimed by the replica rendezvous names,
// the owned counts adding up to six at every sample while changes flow,
// and every change in Git.
func (st *steps) spreadOverThree(t *testing.T) {
	holders := waitSettled(t, st.c, st.s, st.members)
	for _, m := range st.s.branches {
		setValue(t, m, "first")
	}
	samples := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(patience)
	for samples < 5 || !st.allInGit("first") {
		select {
		case <-deadline:
			t.Fatalf("the first values never all reached Git; %s", st.c.logs())
		case <-tick.C:
		}
		require.Equal(t, len(st.s.branches), ownedSum(t, st.c, st.members), "the replicas' owned branches add up to the branches")
		now, err := st.s.holders(context.Background())
		require.NoError(t, err)
		require.Equal(t, holders, settled(now), "no claim moves while the members stay")
		samples++
	}
	t.Logf("%d samples of %s added up to %d; holders %v", samples, ownedMetric, len(st.s.branches), holders)
}

func (st *steps) allInGit(value string) bool {
	for _, m := range st.s.branches {
		if !st.s.inGit(m, value) {
			return false
		}
	}
	return true
}

// killAnOwner: SIGKILL the owner of the first branch; a change made after
// the kill reaches Git through another replica, on top of the head the
// killed one left; its claims ran out (no release) and are another's now.
func (st *steps) killAnOwner(t *testing.T) {
	d := st.ownerOf(t, 0)
	mark := st.events.mark()
	killed := time.Now()
	st.c.get(d.identity).kill()
	for _, m := range d.branches {
		setValue(t, m, "after-kill")
	}
	first := st.waitFirst(t, d.branches, "after-kill")
	t.Logf("failover: SIGKILL of %s to the first commit by another replica: %s (%d branches moved)",
		d.identity, first.Sub(killed).Round(100*time.Millisecond), len(d.branches))
	st.logClaimTimes(t, "the kill", killed, mark, d.branches)
	st.requireTakenOver(t, d, "after-kill", mark)
	// The killed pod comes back under its name, as a StatefulSet's would:
	// a new process, a new claim token.
	st.c.start(t, d.identity)
	waitSettled(t, st.c, st.s, st.members)
}

// departing is a replica a step takes away, and what it held then.
type departing struct {
	identity string
	branches []mirrored
	heads    map[string]string // by branch, when the step began
}

// ownerOf waits until the members settle and names the holder of the
// i-th branch, with its branches and their heads.
func (st *steps) ownerOf(t *testing.T, i int) departing {
	t.Helper()
	holders := waitSettled(t, st.c, st.s, st.members)
	d := departing{identity: identityOf(holders[st.s.branches[i].key]), heads: map[string]string{}}
	d.branches = holders.ownedBy(st.s, d.identity)
	for _, m := range d.branches {
		d.heads[m.branch] = st.s.head(t, m)
	}
	return d
}

// requireTakenOver: value, changed after d stopped owning its branches,
// reached each of them on top of the head d left (the branch only moves
// forward, nothing forced); the other members settle without d, and each
// of d's claims ran out ("expired": d released none) before a survivor
// set it. It returns the survivors' holders.
func (st *steps) requireTakenOver(t *testing.T, d departing, value string, mark map[string]int) settled {
	t.Helper()
	for _, m := range d.branches {
		st.s.waitInGit(t, st.c, m, value)
		require.True(t, st.s.isAncestor(d.heads[m.branch], st.s.head(t, m)),
			"branch %s only moves forward: %s's head %s is an ancestor", m.branch, d.identity, d.heads[m.branch])
	}
	after := waitSettled(t, st.c, st.s, without(st.members, d.identity))
	for _, m := range d.branches {
		require.NotEqual(t, d.identity, identityOf(after[m.key]), "%s holds no claim on %s", d.identity, m.key)
		require.Equal(t, "expired", st.waitEnd(t, mark, m.key), "%s's claim on %s ran out; nobody released it", d.identity, m.key)
		require.Equal(t, "set", st.waitAfter(t, mark, m.key, "expired"), "a survivor claimed %s once it ran out", m.key)
	}
	return after
}

// logClaimTimes logs, for the failover figures (never asserted), when
// each of lost's claims ran out and was set again after the event at since.
func (st *steps) logClaimTimes(t *testing.T, event string, since time.Time, mark map[string]int, lost []mirrored) {
	t.Helper()
	for _, m := range lost {
		// The claim is won before the branch's worker starts, so both
		// events came before the first commit (their delivery may lag).
		expired, taken := st.events.firstAt(mark, m.key, "expired"), st.events.firstAt(mark, m.key, "set")
		if expired.IsZero() || taken.IsZero() {
			continue
		}
		t.Logf("failover of %s: claim expired %s after %s, taken %s after it", m.key,
			expired.Sub(since).Round(100*time.Millisecond), event, taken.Sub(since).Round(100*time.Millisecond))
	}
}

// waitFirst waits until value is in Git on one of branches and returns
// when that was seen.
func (st *steps) waitFirst(t *testing.T, branches []mirrored, value string) time.Time {
	t.Helper()
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(branches, func(m mirrored) bool { return st.s.inGit(m, value) })
	}, patience, 50*time.Millisecond, "%q in Git on any of %d branches; %s", value, len(branches), st.c.logs())
	return time.Now()
}

// firstEnd is the first "del" or "expired" among a claim key's events: how
// its holder's claim ended.
func firstEnd(events []string) string {
	for _, e := range events {
		if e == "del" || e == "expired" {
			return e
		}
	}
	return ""
}

// waitEnd waits for the end of key's claim after mark to be delivered
// (Redis publishes keyspace events after the command, so one may still be
// on its way when the test sees the new state) and returns it.
func (st *steps) waitEnd(t *testing.T, mark map[string]int, key branch.Key) string {
	t.Helper()
	require.Eventually(t, func() bool { return firstEnd(st.events.since(mark, key)) != "" }, patience, 10*time.Millisecond,
		"the claim on %s never ended", key)
	return firstEnd(st.events.since(mark, key))
}

// waitAfter waits for the event after the first of kind on key's claim
// after mark and returns it.
func (st *steps) waitAfter(t *testing.T, mark map[string]int, key branch.Key, kind string) string {
	t.Helper()
	var next string
	require.Eventually(t, func() bool {
		events := st.events.since(mark, key)
		i := slices.Index(events, kind)
		if i < 0 || i+1 >= len(events) {
			return false
		}
		next = events[i+1]
		return true
	}, patience, 10*time.Millisecond, "no event after %q on the claim on %s", kind, key)
	return next
}

// stopOneGracefully: SIGTERM the owner of the second branch right after a
// change to each of its branches; its process exits, its claims were
// released (deleted, not run out) and then set by the others, none ever
// expired, and the changes are in Git.
func (st *steps) stopOneGracefully(t *testing.T) {
	holders := waitSettled(t, st.c, st.s, st.members)
	victim := identityOf(holders[st.s.branches[1].key])
	handed := holders.ownedBy(st.s, victim)
	for _, m := range handed {
		setValue(t, m, "before-term")
	}
	mark := st.events.mark()
	r := st.c.get(victim)
	stopped := time.Now()
	r.terminate(t)
	select {
	case <-r.done:
	case <-time.After(patience):
		t.Fatalf("replica %s did not exit after SIGTERM; log %s", victim, r.logPath)
	}
	exited := time.Now()
	// The kind of the first end is the sentinel: Redis says "del" when the
	// holder released a claim and "expired" when it ran out.
	for _, m := range handed {
		require.Equal(t, "del", st.waitEnd(t, mark, m.key),
			"replica %s released its claim on %s; log %s", victim, m.key, r.logPath)
	}
	st.members = without(st.members, victim)
	st.stopped = victim
	after := waitSettled(t, st.c, st.s, st.members)
	taken := time.Now()
	for _, m := range handed {
		st.s.waitInGit(t, st.c, m, "before-term")
		require.Equal(t, "set", st.waitAfter(t, mark, m.key, "del"), "a survivor claimed %s after its release", m.key)
		require.NotContains(t, st.events.since(mark, m.key), "expired", "no claim on %s ran out", m.key)
		require.NotEqual(t, victim, identityOf(after[m.key]))
	}
	t.Logf("graceful handover of %d branches: SIGTERM to exit %s, to the survivors settled %s",
		len(handed), exited.Sub(stopped).Round(100*time.Millisecond), taken.Sub(stopped).Round(100*time.Millisecond))
}

// startItAgain: the stopped replica starts again; only the branches
// rendezvous gives it among three change holder, the others keep the
// very claim (token) they had.
func (st *steps) startItAgain(t *testing.T) {
	before := waitSettled(t, st.c, st.s, st.members)
	mark := st.events.mark()
	st.c.start(t, st.stopped)
	moved := st.rejoined(t, st.stopped, before, mark)
	t.Logf("%d of %d branches moved to the returning %s", len(moved), len(st.s.branches), st.stopped)
}
