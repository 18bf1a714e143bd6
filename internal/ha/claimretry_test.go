package ha

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// A crashed owner's claim, renewed up to a renew period after its Lease,
// can still be held when the view drops it: the take is tried again just
// after the claim runs out, not a whole period later.
func TestTheAssignerTriesALostClaimAgainWhenItRunsOut(t *testing.T) {
	k := BranchKey{ProviderNamespace: "ns", Provider: "p", Branch: "main"}
	members := newFakeMembers("a", "a")
	claims := &fakeClaims{holders: map[string]string{k.String(): "b-1"}, expiresIn: map[string]time.Duration{k.String(): 500 * time.Millisecond}}
	host := &fakeHost{branches: []BranchKey{k}, events: make(chan string, 4)}
	clk := clocktesting.NewFakeClock(time.Now())
	a, cancel, done := startAssigner(t, members, claims, host, clk)
	defer func() { cancel(); <-done }()

	// The renew ticker, the store-contact ticker and the retry timer.
	require.Eventually(t, func() bool { return clk.Waiters() == 3 }, 5*time.Second, time.Millisecond,
		"a retry is set for when the claim runs out")
	require.False(t, a.Owns(k))
	_, err := claims.Release(context.Background(), k.String(), "b-1") // it ran out
	require.NoError(t, err)
	clk.Step(500*time.Millisecond + claimRetryMargin) // well before the 2 s period
	require.Equal(t, "take main", host.next(t))
}
