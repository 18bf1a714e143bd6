package ha

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/ha"
)

// redisLostSeries counts the branches a replica gave up because it could
// not renew their claims.
const redisLostSeries = `gitopsreverser_ha_handovers_total{cause="redis_lost"}`

// cutOffFromRedis: the owner of the third branch is cut off from Redis (its
// proxy closes every connection and refuses new ones). Its metrics say it
// gave every branch up (owned 0, redis_lost grown by their number) while
// no survivor has set any of its claims yet: the order of those sentinels
// is what keeps two replicas from running one branch. Its claims then run
// out and the survivors take them; a change made once it gave up reaches
// Git through a survivor, on top of the head it left. When the proxy
// forwards again it rejoins and takes back only what rendezvous gives it.
func (st *steps) cutOffFromRedis(t *testing.T) {
	ctx := context.Background()
	d := st.ownerOf(t, 2)
	r := st.c.get(d.identity)
	givenUp, err := r.series(ctx, redisLostSeries)
	require.NoError(t, err)
	mark := st.events.mark()
	cut := time.Now()
	st.c.proxy(d.identity).Cut()
	require.Eventually(t, func() bool {
		owned, err := r.metric(ctx, ownedMetric)
		if err != nil || owned != 0 {
			return false
		}
		n, err := r.series(ctx, redisLostSeries)
		return err == nil && n == givenUp+float64(len(d.branches))
	}, patience, 50*time.Millisecond, "replica %s never gave its %d branches up; log %s", d.identity, len(d.branches), r.logPath)
	gaveUp := time.Now()
	for _, m := range d.branches {
		require.NotContains(t, st.events.since(mark, m.key), "set",
			"a survivor claimed %s before the cut-off %s had given it up", m.key, d.identity)
	}
	// Only now the change: the cut-off replica has stopped the branch, so
	// only a survivor can commit it.
	for _, m := range d.branches {
		setValue(t, m, "after-cut")
	}
	first := st.waitFirst(t, d.branches, "after-cut")
	t.Logf("redis cut-off of %s: gave %d branches up %s after the cut; first commit by a survivor %s after it",
		d.identity, len(d.branches), gaveUp.Sub(cut).Round(100*time.Millisecond), first.Sub(cut).Round(100*time.Millisecond))
	st.logClaimTimes(t, "the cut", cut, mark, d.branches)
	before := st.requireTakenOver(t, d, "after-cut", mark)
	owned, err := r.metric(ctx, ownedMetric)
	require.NoError(t, err)
	require.Zero(t, owned, "replica %s still owns nothing while cut off", d.identity)

	mark = st.events.mark()
	st.c.proxy(d.identity).Restore()
	moved := st.rejoined(t, d.identity, before, mark)
	t.Logf("%d of %d branches moved back to %s once it reached Redis again", len(moved), len(st.s.branches), d.identity)
}

// rejoined waits until who, just back among the members, holds what
// rendezvous gives it: only those branches changed holder (each released,
// "del", by its holder first), every other claim kept its token and saw no
// event since mark, and a change to a moved branch reaches Git. It returns
// the moved branches.
func (st *steps) rejoined(t *testing.T, who string, before settled, mark map[string]int) []mirrored {
	t.Helper()
	st.members = append(without(st.members, who), who)
	slices.Sort(st.members)
	after := waitSettled(t, st.c, st.s, st.members)
	var moved []mirrored
	for _, m := range st.s.branches {
		if ha.Owner(st.members, m.key) == who {
			moved = append(moved, m)
			require.NotEqual(t, before[m.key], after[m.key])
			continue
		}
		require.Equal(t, before[m.key], after[m.key], "branch %s stays with its holder", m.key)
		require.Empty(t, st.events.since(mark, m.key), "nothing happened to the claim on %s", m.key)
	}
	require.NotEmpty(t, moved)
	for _, m := range moved {
		require.Equal(t, "del", st.waitEnd(t, mark, m.key), "the previous holder released %s", m.key)
		setValue(t, m, "back-to-"+who)
		st.s.waitInGit(t, st.c, m, "back-to-"+who)
	}
	return moved
}

// scaleToOneAndBack: SIGTERM two replicas one after the other, so the
// last holds all six claims, then start both again at once. Every step
// moves only the branches it must: a branch whose holder stays keeps its
// very claim token and sees no event, one that moves is released ("del")
// first and never runs out; the branches the last replica holds at the
// start and is given again over the three keep its token throughout.
func (st *steps) scaleToOneAndBack(t *testing.T) {
	start := waitSettled(t, st.c, st.s, st.members)
	startMark := st.events.mark()
	last, stopped := st.members[0], slices.Clone(st.members[1:])
	prev := start
	for _, victim := range stopped {
		mark := st.events.mark()
		r := st.c.get(victim)
		r.terminate(t)
		select {
		case <-r.done:
		case <-time.After(patience):
			t.Fatalf("replica %s did not exit after SIGTERM; log %s", victim, r.logPath)
		}
		st.members = without(st.members, victim)
		now := waitSettled(t, st.c, st.s, st.members)
		st.requireOnlyMoved(t, prev, now, mark)
		prev = now
	}
	require.Len(t, prev.ownedBy(st.s, last), len(st.s.branches), "the last replica %s holds every claim", last)

	mark := st.events.mark()
	for _, id := range stopped {
		st.c.start(t, id)
	}
	st.members = append(st.members, stopped...)
	slices.Sort(st.members)
	end := waitSettled(t, st.c, st.s, st.members)
	st.requireOnlyMoved(t, prev, end, mark)
	kept := 0
	for _, m := range st.s.branches {
		if identityOf(start[m.key]) != last || ha.Owner(st.members, m.key) != last {
			continue
		}
		kept++
		require.Equal(t, start[m.key], end[m.key], "branch %s kept %s's claim token from 3 to 1 to 3", m.key, last)
		require.Empty(t, st.events.since(startMark, m.key), "nothing happened to the claim on %s from 3 to 1 to 3", m.key)
	}
	for _, m := range st.s.branches {
		setValue(t, m, "after-scale")
	}
	for _, m := range st.s.branches {
		st.s.waitInGit(t, st.c, m, "after-scale")
	}
	t.Logf("3 -> 1 -> 3: %s kept %d branches' claims throughout", last, kept)
}

// requireOnlyMoved: between two settled states, a branch held by the same
// replica kept its token and saw no claim event since mark; one that moved
// was released by its holder ("del") before it was set again, and never
// ran out.
func (st *steps) requireOnlyMoved(t *testing.T, from, to settled, mark map[string]int) {
	t.Helper()
	for _, m := range st.s.branches {
		if identityOf(from[m.key]) == identityOf(to[m.key]) {
			require.Equal(t, from[m.key], to[m.key], "branch %s stays with its holder's claim", m.key)
			require.Empty(t, st.events.since(mark, m.key), "nothing happened to the claim on %s", m.key)
			continue
		}
		require.Equal(t, "del", st.waitEnd(t, mark, m.key), "the previous holder released %s", m.key)
		require.Equal(t, "set", st.waitAfter(t, mark, m.key, "del"), "the new holder claimed %s after the release", m.key)
		require.NotContains(t, st.events.since(mark, m.key), "expired", "no claim on %s ran out", m.key)
	}
}
