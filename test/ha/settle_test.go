package ha

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/ha"
)

const (
	membersMetric = "gitopsreverser_ha_members"
	ownedMetric   = "gitopsreverser_ha_branches_owned"
)

// settled is the state every replica agrees on once membership stopped
// changing: the claim token of every branch.
type settled map[branch.Key]string

// waitSettled waits until exactly members run and each counts them all
// live, every branch's claim is held by the member rendezvous hashing
// gives it to, and the members' owned counts add up to the branches.
func waitSettled(t testing.TB, c *cluster, s *spread, members []string) settled {
	t.Helper()
	var holders settled
	// EventuallyWithT reports what the last look found unsettled; a replica
	// that crashed ends the wait at once, with its log.
	crash := ""
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		if crash = c.fault(false); crash != "" {
			return
		}
		h, why := checkSettled(context.Background(), c, s, members)
		if why != "" {
			collect.Errorf("%s", why)
			return
		}
		holders = h
	}, patience, 200*time.Millisecond, "members %v never settled; %s", members, c.logs())
	require.Empty(t, crash, "waiting for members %v to settle", members)
	return holders
}

// checkSettled says what is not settled yet ("" when settled).
func checkSettled(ctx context.Context, c *cluster, s *spread, members []string) (settled, string) {
	if running := len(c.running()); running != len(members) {
		return nil, fmt.Sprintf("%d replicas run", running)
	}
	owned := 0.0
	for _, id := range members {
		r := c.get(id)
		if r == nil || r.exited() {
			return nil, id + " is not running"
		}
		n, err := r.metric(ctx, membersMetric)
		if err != nil {
			return nil, err.Error()
		}
		if int(n) != len(members) {
			return nil, fmt.Sprintf("%s counts %v members", id, n)
		}
		o, err := r.metric(ctx, ownedMetric)
		if err != nil {
			return nil, err.Error()
		}
		owned += o
	}
	holders, err := s.holders(ctx)
	if err != nil {
		return nil, err.Error()
	}
	for _, m := range s.branches {
		if got, want := identityOf(holders[m.key]), ha.Owner(members, m.key); got != want {
			return nil, fmt.Sprintf("branch %s is held by %q, rendezvous gives it to %s", m.key, holders[m.key], want)
		}
	}
	if int(owned) != len(s.branches) {
		return nil, fmt.Sprintf("the replicas own %v branches together", owned)
	}
	return holders, ""
}

// ownedSum is the sum of gitopsreverser_ha_branches_owned over members.
func ownedSum(t testing.TB, c *cluster, members []string) int {
	t.Helper()
	sum := 0.0
	for _, id := range members {
		n, err := c.get(id).metric(context.Background(), ownedMetric)
		require.NoError(t, err)
		sum += n
	}
	return int(sum)
}

// ownedBy are the branches whose claim token identity holds.
func (h settled) ownedBy(s *spread, identity string) []mirrored {
	var out []mirrored
	for _, m := range s.branches {
		if identityOf(h[m.key]) == identity {
			out = append(out, m)
		}
	}
	return out
}

// without is members minus gone.
func without(members []string, gone string) []string {
	var out []string
	for _, m := range members {
		if m != gone {
			out = append(out, m)
		}
	}
	return out
}
