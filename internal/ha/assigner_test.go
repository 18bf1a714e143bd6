package ha

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeMembers publishes views by hand.
type fakeMembers struct {
	mu        sync.Mutex
	view      View
	changed   chan struct{}
	suspended bool
	left      bool
	// storeDownForAll: no other member reaches the store either.
	storeDownForAll bool
}

func (m *fakeMembers) OthersReachStore() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.storeDownForAll
}

func newFakeMembers(self string, members ...string) *fakeMembers {
	return &fakeMembers{view: View{Version: 1, Members: members, Self: self, SelfLive: true}, changed: make(chan struct{})}
}

func (m *fakeMembers) Current() (View, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view, m.changed
}

func (m *fakeMembers) publish(members ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.view = View{Version: m.view.Version + 1, Members: members, Self: m.view.Self, SelfLive: true}
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *fakeMembers) Suspend() { m.mu.Lock(); m.suspended = true; m.mu.Unlock() }

func (m *fakeMembers) isSuspended() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.suspended
}
func (m *fakeMembers) Resume() { m.mu.Lock(); m.suspended = false; m.mu.Unlock() }
func (m *fakeMembers) Leave(context.Context) error {
	m.mu.Lock()
	m.left = true
	m.mu.Unlock()
	return nil
}

// fakeClaims is a claim store in memory; down makes every call fail. A
// held claim has a full TTL left unless expiresIn says otherwise.
type fakeClaims struct {
	mu        sync.Mutex
	holders   map[string]string
	down      bool
	expiresIn map[string]time.Duration
}

func (c *fakeClaims) TryAcquire(_ context.Context, b, token string, ttl time.Duration) (bool, time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return false, 0, errors.New("down")
	}
	if h, ok := c.holders[b]; ok && h != token {
		if left, ok := c.expiresIn[b]; ok {
			return false, left, nil
		}
		return false, ttl, nil
	}
	c.holders[b] = token
	return true, 0, nil
}

func (c *fakeClaims) Renew(_ context.Context, token string, branches []string, _ time.Duration) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return nil, errors.New("down")
	}
	var lost []string
	for _, b := range branches {
		if c.holders[b] != token {
			lost = append(lost, b)
		}
	}
	return lost, nil
}

func (c *fakeClaims) Release(_ context.Context, b, token string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holders[b] != token {
		return false, nil
	}
	delete(c.holders, b)
	return true, nil
}

func (c *fakeClaims) holder(b string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holders[b]
}

// fakeHost records what the assigner did, in order.
type fakeHost struct {
	mu       sync.Mutex
	branches []BranchKey
	events   chan string
}

func (h *fakeHost) Branches() []BranchKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.branches
}

func (h *fakeHost) setBranches(keys ...BranchKey) {
	h.mu.Lock()
	h.branches = keys
	h.mu.Unlock()
}
func (h *fakeHost) Take(k BranchKey) { h.events <- "take " + k.Branch }
func (h *fakeHost) Release(_ context.Context, k BranchKey, graceful bool) {
	h.events <- fmt.Sprintf("release %s graceful=%t", k.Branch, graceful)
}

func (h *fakeHost) next(t *testing.T) string {
	t.Helper()
	select {
	case e := <-h.events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("the assigner did nothing")
		return ""
	}
}

// branchesOf are n branches and, for member, the first branch rendezvous
// gives it among members.
func firstBranchOf(t *testing.T, keys []BranchKey, member string, members ...string) BranchKey {
	t.Helper()
	for _, k := range keys {
		if Owner(members, k) == member {
			return k
		}
	}
	t.Fatalf("no branch hashes to %s", member)
	return BranchKey{}
}

func startAssigner(t *testing.T, members *fakeMembers, claims *fakeClaims, host *fakeHost, clk *clocktesting.FakeClock,
	options ...func(*AssignerConfig)) (*Assigner, context.CancelFunc, chan error) {
	t.Helper()
	ping := func(context.Context) error {
		claims.mu.Lock()
		defer claims.mu.Unlock()
		if claims.down {
			return errors.New("down")
		}
		return nil
	}
	cfg := AssignerConfig{Members: members, Claims: claims, Host: host, Token: "a-1", Clock: clk, Ping: ping, Log: logr.Discard()}
	for _, option := range options {
		option(&cfg)
	}
	a, err := NewAssigner(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return a, cancel, done
}

func TestTheAssignerTakesWhatHashesToItAndHandsItOverWhenAMemberJoins(t *testing.T) {
	keys := []BranchKey{{ProviderNamespace: "ns", Provider: "p", Branch: "b0"}, {ProviderNamespace: "ns", Provider: "p", Branch: "b1"},
		{ProviderNamespace: "ns", Provider: "p", Branch: "b2"}, {ProviderNamespace: "ns", Provider: "p", Branch: "b3"}}
	moved := firstBranchOf(t, keys, "b", "a", "b")
	members := newFakeMembers("a", "a")
	claims := &fakeClaims{holders: map[string]string{}}
	host := &fakeHost{branches: keys, events: make(chan string, 16)}
	clk := clocktesting.NewFakeClock(time.Now())
	a, cancel, done := startAssigner(t, members, claims, host, clk)

	for range keys {
		require.Contains(t, host.next(t), "take ")
	}
	require.Eventually(t, func() bool { return a.Owns(moved) }, 5*time.Second, time.Millisecond)

	members.publish("a", "b")
	require.Equal(t, "release "+moved.Branch+" graceful=true", host.next(t))
	require.Eventually(t, func() bool { return claims.holder(moved.String()) == "" }, 5*time.Second, time.Millisecond,
		"the claim is given up once the branch is handed over")
	require.False(t, a.Owns(moved))

	cancel()
	require.NoError(t, <-done)
	for range len(keys) - 1 {
		require.Contains(t, host.next(t), "graceful=true", "a shutdown hands every branch over")
	}
	require.True(t, members.left)
}

// TestABranchNoGitTargetWritesIsCommittedThenItsJournalDropped: the last
// GitTarget of a branch goes away; the branch is handed over as on a
// stop (its worker commits), then its journal is dropped while the claim
// still fences it, then the claim is released. A branch another member
// takes keeps its journal.
func TestABranchNoGitTargetWritesIsCommittedThenItsJournalDropped(t *testing.T) {
	gone := BranchKey{ProviderNamespace: "ns", Provider: "p", Branch: "gone"}
	stays := BranchKey{ProviderNamespace: "ns", Provider: "p", Branch: "stays"}
	members := newFakeMembers("a", "a")
	claims := &fakeClaims{holders: map[string]string{}}
	host := &fakeHost{branches: []BranchKey{gone, stays}, events: make(chan string, 16)}
	dropped := make(chan string, 4)
	drop := func(_ context.Context, branch, token string) error {
		dropped <- fmt.Sprintf("%s by %s, claim held by %s", branch, token, claims.holder(branch))
		return nil
	}
	a, cancel, done := startAssigner(t, members, claims, host, clocktesting.NewFakeClock(time.Now()),
		func(cfg *AssignerConfig) { cfg.Drop = drop })
	require.Contains(t, host.next(t), "take ")
	require.Contains(t, host.next(t), "take ")

	host.setBranches(stays)
	a.Kick()
	require.Equal(t, "release gone graceful=true", host.next(t))
	require.Equal(t, gone.String()+" by a-1, claim held by a-1", <-dropped)
	require.Eventually(t, func() bool { return claims.holder(gone.String()) == "" }, 5*time.Second, time.Millisecond)

	cancel()
	require.NoError(t, <-done)
	require.Equal(t, "release stays graceful=true", host.next(t))
	require.Empty(t, dropped, "a branch handed over keeps its journal for the next owner")
}

func TestTheAssignerWaitsForTheClaimOfABranchItIsGiven(t *testing.T) {
	k := BranchKey{ProviderNamespace: "ns", Provider: "p", Branch: "main"}
	members := newFakeMembers("a", "a")
	claims := &fakeClaims{holders: map[string]string{k.String(): "b-1"}}
	host := &fakeHost{branches: []BranchKey{k}, events: make(chan string, 4)}
	clk := clocktesting.NewFakeClock(time.Now())
	a, cancel, done := startAssigner(t, members, claims, host, clk)
	defer func() { cancel(); <-done }()

	require.Never(t, func() bool { return a.Owns(k) }, 100*time.Millisecond, 5*time.Millisecond,
		"the previous owner still holds the claim")
	_, err := claims.Release(context.Background(), k.String(), "b-1")
	require.NoError(t, err)
	clk.Step(2 * time.Second) // the next renew period tries again
	require.Equal(t, "take main", host.next(t))
}

func TestTheAssignerGivesEverythingUpWhenItCannotRenewInTime(t *testing.T) {
	k := BranchKey{ProviderNamespace: "ns", Provider: "p", Branch: "main"}
	members := newFakeMembers("a", "a")
	claims := &fakeClaims{holders: map[string]string{}}
	host := &fakeHost{branches: []BranchKey{k}, events: make(chan string, 4)}
	clk := clocktesting.NewFakeClock(time.Now())
	a, cancel, done := startAssigner(t, members, claims, host, clk)
	defer func() { cancel(); <-done }()
	require.Equal(t, "take main", host.next(t))

	claims.mu.Lock()
	claims.down = true
	claims.mu.Unlock()
	for i := 0; i < 4; i++ { // 8 s of failed renewals: not yet the deadline
		require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
		clk.Step(2 * time.Second)
	}
	require.True(t, a.Owns(k))
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
	clk.Step(2 * time.Second) // 10 s: the deadline
	require.Equal(t, "release main graceful=false", host.next(t), "a fenced replica commits nothing")
	require.Eventually(t, func() bool { return !a.Owns(k) }, 5*time.Second, time.Millisecond)
	require.True(t, members.isSuspended())

	claims.mu.Lock()
	claims.down = false
	claims.mu.Unlock()
	require.Eventually(t, func() bool {
		clk.Step(2 * time.Second)
		return !members.isSuspended()
	}, 5*time.Second, 10*time.Millisecond, "back in the membership once the store answers")
}

// TestAStoreDownForEveryReplicaLeavesTheBranchesRunning: past the renew
// deadline with no other member reaching the store, nobody can take a
// branch, so this replica runs its branches on from memory; when the
// store answers, it wins its expired claims again and nothing moved. Had
// another member reached the store meanwhile, it gives everything up as
// on a cut-off of its own.
func TestAStoreDownForEveryReplicaLeavesTheBranchesRunning(t *testing.T) {
	for _, othersBackFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("others back first %t", othersBackFirst), func(t *testing.T) {
			k := BranchKey{ProviderNamespace: "ns", Provider: "p", Branch: "main"}
			members := newFakeMembers("a", "a", "b")
			members.storeDownForAll = true
			claims := &fakeClaims{holders: map[string]string{}}
			host := &fakeHost{branches: []BranchKey{k}, events: make(chan string, 4)}
			clk := clocktesting.NewFakeClock(time.Now())
			outage := make(chan bool, 4)
			a, cancel, done := startAssigner(t, members, claims, host, clk,
				func(cfg *AssignerConfig) { cfg.Observer = outageObserver(outage) })
			defer func() { cancel(); <-done }()
			if Owner([]string{"a", "b"}, k) != "a" {
				t.Skip("rendezvous gives the branch to b")
			}
			require.Equal(t, "take main", host.next(t))

			setDown := func(down bool) {
				claims.mu.Lock()
				claims.down = down
				if down {
					delete(claims.holders, k.String()) // it expires while nobody can renew it
				}
				claims.mu.Unlock()
			}
			setDown(true)
			for i := 0; i < 5; i++ { // 10 s: the deadline
				require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
				clk.Step(2 * time.Second)
			}
			require.True(t, <-outage, "running through an outage of the store")
			for i := 0; i < 3; i++ { // 16 s: past the claim's TTL
				clk.Step(2 * time.Second)
			}
			require.True(t, a.Owns(k), "nobody can take it: it runs on")
			require.False(t, members.isSuspended())
			require.Empty(t, host.events)

			if othersBackFirst {
				members.mu.Lock()
				members.storeDownForAll = false
				members.mu.Unlock()
				require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
				clk.Step(2 * time.Second)
				require.Equal(t, "release main graceful=false", host.next(t), "cut off now: it stops before the others can take it")
				require.True(t, members.isSuspended())
				return
			}
			setDown(false)
			require.Eventually(t, func() bool {
				clk.Step(2 * time.Second)
				return claims.holder(k.String()) == "a-1"
			}, 5*time.Second, 10*time.Millisecond, "the expired claim is won again")
			require.True(t, a.Owns(k))
			require.False(t, <-outage, "the outage is over")
			require.Empty(t, host.events, "nothing was released or taken")
		})
	}
}

// outageObserver sends what StoreOutage is told.
type outageObserver chan bool

func (o outageObserver) Members(int)            {}
func (o outageObserver) Owned(int)              {}
func (o outageObserver) Handover(Cause)         {}
func (o outageObserver) Failover(time.Duration) {}
func (o outageObserver) StoreOutage(on bool)    { o <- on }

func TestABranchWhoseClaimWasLostStopsWithoutCommitting(t *testing.T) {
	k := BranchKey{ProviderNamespace: "ns", Provider: "p", Branch: "main"}
	members := newFakeMembers("a", "a")
	claims := &fakeClaims{holders: map[string]string{}}
	host := &fakeHost{branches: []BranchKey{k}, events: make(chan string, 4)}
	clk := clocktesting.NewFakeClock(time.Now())
	_, cancel, done := startAssigner(t, members, claims, host, clk)
	defer func() { cancel(); <-done }()
	require.Equal(t, "take main", host.next(t))

	claims.mu.Lock()
	claims.holders[k.String()] = "b-1" // expired while cut off, and taken
	claims.mu.Unlock()
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
	clk.Step(2 * time.Second)
	require.Equal(t, "release main graceful=false", host.next(t))
}

// recordingObserver keeps the handovers and failovers reported.
type recordingObserver struct {
	NopObserver
	mu        sync.Mutex
	handovers []Cause
	failovers []time.Duration
}

func (r *recordingObserver) Handover(c Cause) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handovers = append(r.handovers, c)
}

func (r *recordingObserver) Failover(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failovers = append(r.failovers, d)
}

func (r *recordingObserver) seen() ([]Cause, []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Cause(nil), r.handovers...), append([]time.Duration(nil), r.failovers...)
}

// A branch whose lost owner's claim outlives the view that moved it is
// taken periods later: it is still counted once, as member_lost, by the
// replica taking it, with the failover timed from the lost owner's last
// renewal. A replica's first assignment is no handover.
func TestATakeLateAfterTheViewStillCountsTheFailover(t *testing.T) {
	keys := []BranchKey{{ProviderNamespace: "ns", Provider: "p", Branch: "b0"}, {ProviderNamespace: "ns", Provider: "p", Branch: "b1"},
		{ProviderNamespace: "ns", Provider: "p", Branch: "b2"}, {ProviderNamespace: "ns", Provider: "p", Branch: "b3"}}
	lostBranch := firstBranchOf(t, keys, "b", "a", "b")
	members := newFakeMembers("a", "a", "b")
	claims := &fakeClaims{holders: map[string]string{lostBranch.String(): "b-1"}}
	host := &fakeHost{branches: keys, events: make(chan string, 16)}
	clk := clocktesting.NewFakeClock(time.Now())
	obs := &recordingObserver{}
	a, err := NewAssigner(AssignerConfig{Members: members, Claims: claims, Host: host, Token: "a-1", Clock: clk, Log: logr.Discard(),
		Observer: obs})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	mine := 0
	for _, k := range keys {
		if Owner([]string{"a", "b"}, k) == "a" {
			mine++
		}
	}
	for range mine {
		require.Contains(t, host.next(t), "take ")
	}

	lastRenewed := clk.Now()
	clk.Step(15 * time.Second)
	members.mu.Lock()
	members.view = View{Version: 2, Members: []string{"a"}, Self: "a", SelfLive: true,
		Left: []Departure{{Member: "b", Cause: CauseMemberLost, LastRenewed: lastRenewed}}}
	close(members.changed)
	members.changed = make(chan struct{})
	members.mu.Unlock()
	require.Never(t, func() bool { return a.Owns(lostBranch) }, 100*time.Millisecond, 5*time.Millisecond,
		"b's claim has not expired yet")

	_, err = claims.Release(context.Background(), lostBranch.String(), "b-1") // it expires
	require.NoError(t, err)
	members.publish("a") // a later view, with no departure in it
	require.Eventually(t, func() bool { return a.Owns(lostBranch) }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		handovers, failovers := obs.seen()
		return len(handovers) == len(keys)-mine && len(failovers) == len(keys)-mine
	}, 5*time.Second, time.Millisecond)
	handovers, failovers := obs.seen()
	for _, c := range handovers {
		require.Equal(t, CauseMemberLost, c)
	}
	for _, d := range failovers {
		require.GreaterOrEqual(t, d, 15*time.Second)
	}
}

// The store contact a Lease renewal publishes is refreshed apart from the
// assign loop: a handover that keeps the loop busy (here a release that
// does not return) must not make this replica look cut off from Redis to
// the others.
func TestTheStoreContactStaysFreshWhileAHandoverBlocksTheLoop(t *testing.T) {
	keys := []BranchKey{{ProviderNamespace: "ns", Provider: "p", Branch: "b0"}, {ProviderNamespace: "ns", Provider: "p", Branch: "b1"},
		{ProviderNamespace: "ns", Provider: "p", Branch: "b2"}, {ProviderNamespace: "ns", Provider: "p", Branch: "b3"}}
	moved := firstBranchOf(t, keys, "b", "a", "b")
	members := newFakeMembers("a", "a")
	claims := &fakeClaims{holders: map[string]string{}}
	// No room for events: the first take fills it and every later event,
	// the release included, blocks the assign loop until read.
	host := &fakeHost{branches: []BranchKey{moved}, events: make(chan string, 1)}
	clk := clocktesting.NewFakeClock(time.Now())
	a, cancel, done := startAssigner(t, members, claims, host, clk)
	defer func() {
		cancel()
		for { // unblock the loop, then let it hand over
			select {
			case <-done:
				return
			case <-host.events:
			}
		}
	}()
	require.Eventually(t, func() bool { return a.Owns(moved) }, 5*time.Second, time.Millisecond)
	members.publish("a", "b") // the loop blocks releasing moved

	for range 3 {
		clk.Step(2 * time.Second)
		require.Eventually(t, func() bool { return a.StoreContact().Equal(clk.Now()) }, 5*time.Second, time.Millisecond,
			"the contact follows the clock while the loop is blocked")
	}
}
