package ha

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// outageMetric is 1 while a replica runs its branches from memory because
// Redis is down for every replica.
const outageMetric = "gitopsreverser_ha_store_outage"

// redisDownForAll: every replica's proxy is cut at once, so Redis is down
// for all of them. Past the renew deadline each one says so (the outage
// gauge at 1) and none gives a branch up: nobody could take it, so the
// owners run their branches on from memory and a change to every branch
// made then reaches Git. When Redis answers again each replica wins its
// expired claims back with its very token: every branch ends held by the
// same token as before, and no replica counted a branch given up.
func (st *steps) redisDownForAll(t *testing.T) {
	ctx := context.Background()
	before := waitSettled(t, st.c, st.s, st.members)
	givenUp := map[string]float64{}
	for _, id := range st.members {
		n, err := st.c.get(id).series(ctx, redisLostSeries)
		require.NoError(t, err)
		givenUp[id] = n
	}
	for _, id := range st.members {
		st.c.proxy(id).Cut()
	}
	restored := false
	defer func() {
		if !restored { // a failed step leaves Redis reachable for the log's sake
			for _, id := range st.members {
				st.c.proxy(id).Restore()
			}
		}
	}()
	st.waitOutage(t, 1)
	for _, id := range st.members {
		r := st.c.get(id)
		n, err := r.series(ctx, redisLostSeries)
		require.NoError(t, err)
		require.Equal(t, givenUp[id], n, "%s gave no branch up", id)
		owned, err := r.metric(ctx, ownedMetric)
		require.NoError(t, err)
		require.Equal(t, float64(heldBy(before, id)), owned, "%s still owns its branches", id)
	}
	for _, m := range st.s.branches {
		setValue(t, m, "redis-down")
	}
	for _, m := range st.s.branches {
		st.s.waitInGit(t, st.c, m, "redis-down")
	}

	for _, id := range st.members {
		st.c.proxy(id).Restore()
	}
	restored = true
	st.waitOutage(t, 0)
	after := waitSettled(t, st.c, st.s, st.members)
	require.Equal(t, before, after, "every branch is held by the very token it was held by before the outage")
}

// waitOutage waits until every running replica's outage gauge is want.
func (st *steps) waitOutage(t *testing.T, want float64) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		for _, id := range st.members {
			v, err := st.c.get(id).metric(ctx, outageMetric)
			if err != nil || v != want {
				return false
			}
		}
		return true
	}, patience, 100*time.Millisecond, "the replicas' %s never all read %v; %s", outageMetric, want, st.c.logs())
}

// heldBy counts the branches whose claim token is identity's.
func heldBy(holders settled, identity string) int {
	n := 0
	for _, token := range holders {
		if identityOf(token) == identity {
			n++
		}
	}
	return n
}
