package ha_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/internal/ha"
)

func TestMembersConvergeAndOneThatStopsRenewingExpires(t *testing.T) {
	ns := namespace(t)
	a := start(t, ns, "pod-a", clock.RealClock{}, short)
	b := start(t, ns, "pod-b", clock.RealClock{}, short)
	c := start(t, ns, "pod-c", clock.RealClock{}, short)
	for _, m := range []*member{a, b, c} {
		v := waitView(t, m, "all three are live", members("pod-a", "pod-b", "pod-c"))
		require.True(t, v.SelfLive)
	}

	leases, err := clientset(t, nil).CoordinationV1().Leases(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: ha.GroupLabel + "=" + ha.DefaultGroup})
	require.NoError(t, err)
	require.Len(t, leases.Items, 3, "one Lease per replica")
	require.Equal(t, "pod-a", *leases.Items[0].Spec.HolderIdentity)
	require.Equal(t, ha.LeaseName(ha.DefaultGroup, "pod-a"), leases.Items[0].Name)

	// A crash: c stops renewing and keeps its Lease.
	c.stop()
	<-c.done
	for _, m := range []*member{a, b} {
		v := waitView(t, m, "c expired", members("pod-a", "pod-b"))
		d, left := v.Departed("pod-c")
		require.True(t, left, "the view that drops c says so: %+v", v)
		require.Equal(t, ha.CauseMemberLost, d.Cause)
		require.False(t, d.LastRenewed.IsZero())
	}
	_, err = clientset(t, nil).CoordinationV1().Leases(ns).Get(context.Background(), ha.LeaseName(ha.DefaultGroup, "pod-c"), metav1.GetOptions{})
	require.NoError(t, err, "c's Lease is still there: it expired by the others' clocks")
}

func TestALeavingMemberIsGoneAtOnce(t *testing.T) {
	ns := namespace(t)
	// The clock never moves: nobody's Lease can expire, so whatever the
	// others see of c leaving comes from its Lease being deleted.
	frozen := clocktesting.NewFakeClock(time.Now())
	a := start(t, ns, "pod-a", frozen, short)
	b := start(t, ns, "pod-b", frozen, short)
	c := start(t, ns, "pod-c", frozen, short)
	for _, m := range []*member{a, b, c} {
		waitView(t, m, "all three are live", members("pod-a", "pod-b", "pod-c"))
	}

	require.NoError(t, c.Leave(context.Background()))
	own, _ := c.Current()
	require.False(t, own.SelfLive, "c is out of its own view when Leave returns")
	require.Equal(t, []string{"pod-a", "pod-b"}, own.Members)
	d, _ := own.Departed("pod-c")
	require.Equal(t, ha.CauseGraceful, d.Cause)
	for _, m := range []*member{a, b} {
		v := waitView(t, m, "c left", members("pod-a", "pod-b"))
		d, left := v.Departed("pod-c")
		require.True(t, left)
		require.Equal(t, ha.CauseGraceful, d.Cause)
	}
}

func TestAMemberThatCannotRenewFencesItselfBeforeTheOthersDropIt(t *testing.T) {
	for _, mode := range []string{"hanging", "refused"} {
		t.Run(mode, func(t *testing.T) { testFencing(t, mode) })
	}
}

func testFencing(t *testing.T, mode string) {
	ns := namespace(t)
	// Each its own clock: a's stands still while c's runs, so what a sees
	// of c at a given moment does not depend on how fast this machine is.
	aClock := clocktesting.NewFakeClock(time.Now())
	cClock := clocktesting.NewFakeClock(time.Now())
	a := start(t, ns, "pod-a", aClock, short)
	cStart := cClock.Now() // c's first renewal is sent at start, before any step
	c := start(t, ns, "pod-c", cClock, short)
	for _, m := range []*member{a, c} {
		waitView(t, m, "both are live", members("pod-a", "pod-c"))
	}

	// c's API server stops answering: its renewals hang, or fail at once.
	blocked := &c.transport.hang
	if mode == "refused" {
		blocked = &c.transport.refuse
	}
	blocked.Store(true)
	stepUntil(t, cClock, func() bool { v, _ := c.Current(); return !v.SelfLive })
	own, _ := c.Current()
	require.Equal(t, []string{"pod-a"}, own.Members, "c gave itself up")
	require.GreaterOrEqual(t, cClock.Since(cStart), short.renew, "at RenewDeadline by its clock")
	require.Less(t, cClock.Since(cStart), short.lease, "before LeaseDuration by its clock")
	v, _ := a.Current()
	require.True(t, v.Has("pod-c"), "a still counts c live: c fenced itself first")

	stepUntil(t, aClock, func() bool { v, _ := a.Current(); return !v.Has("pod-c") })
	waitView(t, a, "a alone", members("pod-a"))

	// The API server answers again: c renews and is back, in its own view
	// and in a's.
	blocked.Store(false)
	stepUntil(t, cClock, func() bool { v, _ := c.Current(); return v.SelfLive })
	stepUntil(t, aClock, func() bool { v, _ := a.Current(); return v.Has("pod-c") })
}

func TestASuspendedMemberDropsItselfAtOnceAndResumes(t *testing.T) {
	ns := namespace(t)
	frozen := clocktesting.NewFakeClock(time.Now())
	a := start(t, ns, "pod-a", frozen, short)
	c := start(t, ns, "pod-c", frozen, short)
	for _, m := range []*member{a, c} {
		waitView(t, m, "both are live", members("pod-a", "pod-c"))
	}

	c.Suspend()
	v := waitView(t, c, "c suspended", func(v ha.View) bool { return !v.SelfLive })
	require.Equal(t, []string{"pod-a"}, v.Members)
	d, _ := v.Departed("pod-c")
	require.Equal(t, ha.CauseRedisLost, d.Cause)
	other, _ := a.Current()
	require.True(t, other.Has("pod-c"), "the others keep c until its Lease expires")

	writes := c.transport.writes.Load()
	c.Resume()
	waitView(t, c, "c resumed", func(v ha.View) bool { return v.SelfLive && v.Has("pod-c") })
	require.Eventually(t, func() bool { return c.transport.writes.Load() > writes }, 60*time.Second, 10*time.Millisecond,
		"Resume renews at once")
}

func TestNewRefusesAnInconsistentCadence(t *testing.T) {
	cs := clientset(t, nil)
	_, err := ha.New(ha.Config{Client: cs, Namespace: "ns", Identity: "pod-a", LeaseDuration: 2 * time.Second, RenewDeadline: 2 * time.Second})
	require.ErrorContains(t, err, "RenewDeadline")
	_, err = ha.New(ha.Config{Client: cs, Namespace: "ns"})
	require.ErrorContains(t, err, "identity")
	_, err = ha.New(ha.Config{Client: cs, Namespace: "ns", Identity: "Pod_A"})
	require.ErrorContains(t, err, "lease name")
	m, err := ha.New(ha.Config{Client: cs, Namespace: "ns", Identity: "pod-a"})
	require.NoError(t, err, "controller-runtime's cadence is the default")
	v, _ := m.Current()
	require.Zero(t, v.Version, "no view before Run lists the members")
}

func TestTheFirstMemberCollectsADeadMembersLease(t *testing.T) {
	ns := namespace(t)
	aClock := clocktesting.NewFakeClock(time.Now())
	a := start(t, ns, "pod-a", aClock, short)
	aStart := aClock.Now()
	c := start(t, ns, "pod-c", clocktesting.NewFakeClock(time.Now()), short)
	waitView(t, a, "both are live", members("pod-a", "pod-c"))
	c.stop()
	<-c.done

	leases := clientset(t, nil).CoordinationV1().Leases(ns)
	stepUntil(t, aClock, func() bool {
		_, err := leases.Get(context.Background(), ha.LeaseName(ha.DefaultGroup, "pod-c"), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	require.GreaterOrEqual(t, aClock.Since(aStart), short.lease+4*short.lease, "collected only CollectAfter after it expired")
	_, err := leases.Get(context.Background(), ha.LeaseName(ha.DefaultGroup, "pod-a"), metav1.GetOptions{})
	require.NoError(t, err, "a keeps its own")
}

func TestMembershipNeedsOnlyLeaseVerbsInItsNamespace(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	admin := clientset(t, nil)
	_, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "members"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: ha.LeaseVerbs}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "members"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "members"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "operator", Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The authorizer learns of the binding through its own informer: wait
	// for it, since a frozen clock never retries a refused first renewal.
	require.Eventually(t, func() bool {
		review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:serviceaccount:" + ns + ":operator",
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: "delete", Group: "coordination.k8s.io", Resource: "leases"},
			}}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed
	}, 60*time.Second, 20*time.Millisecond)
	operator := kube.ConfigAsServiceAccount(ns, "operator")
	frozen := clocktesting.NewFakeClock(time.Now())
	a := startAs(t, operator, ns, "pod-a", frozen, short)
	c := startAs(t, operator, ns, "pod-c", frozen, short)
	for _, m := range []*member{a, c} {
		waitView(t, m, "both are live", members("pod-a", "pod-c"))
	}
	require.NoError(t, c.Leave(ctx), "delete is granted")
	waitView(t, a, "c left", members("pod-a"))
}

func TestLiveMembersOwnEveryBranchExactlyOnceBeforeAndAfterALoss(t *testing.T) {
	ns := namespace(t)
	branches := keys(500)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replicas := map[string]*member{}
	owners := map[string]*owner{}
	for _, id := range []string{"pod-a", "pod-b", "pod-c"} {
		replicas[id] = start(t, ns, id, clock.RealClock{}, short)
		owners[id] = own(ctx, replicas[id], branches)
	}
	// partitioned: each live owner has acted on a view of exactly live, and
	// together they own every branch once.
	partitioned := func(live ...string) func() bool {
		return func() bool {
			seen := map[ha.BranchKey]int{}
			for _, id := range live {
				v, _ := replicas[id].Current()
				owned, version := owners[id].snapshot()
				if !members(live...)(v) || version != v.Version {
					return false
				}
				for k := range owned {
					seen[k]++
				}
			}
			for _, k := range branches {
				if seen[k] != 1 {
					return false
				}
			}
			return len(seen) == len(branches)
		}
	}
	require.Eventually(t, partitioned("pod-a", "pod-b", "pod-c"), 60*time.Second, 20*time.Millisecond)
	before, _ := owners["pod-a"].snapshot()

	replicas["pod-c"].stop()
	require.Eventually(t, partitioned("pod-a", "pod-b"), 60*time.Second, 20*time.Millisecond)
	after, _ := owners["pod-a"].snapshot()
	for k := range before {
		require.True(t, after[k], "a kept %s: only c's branches moved", k)
	}
}

// TestTheMembersTellAStoreCutOffFromOneFromAStoreDownForAll: every renewal
// publishes when the member last reached the shared store; another member
// counts it as reaching the store while that contact is fresh at its
// renewals, and a member that publishes none (an older release) as
// reaching it.
func TestTheMembersTellAStoreCutOffFromOneFromAStoreDownForAll(t *testing.T) {
	ns := namespace(t)
	var reaching atomic.Bool
	reaching.Store(true)
	lastContact := time.Now()
	var mu sync.Mutex
	contact := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if reaching.Load() {
			lastContact = time.Now()
		}
		return lastContact
	}
	withContact := short
	withContact.storeContact = contact
	a := start(t, ns, "pod-a", clock.RealClock{}, withContact)
	b := start(t, ns, "pod-b", clock.RealClock{}, withContact)
	for _, m := range []*member{a, b} {
		waitView(t, m, "both are live", members("pod-a", "pod-b"))
	}
	waitFor(t, "a sees b reach the store", func() bool { return a.OthersReachStore() })

	reaching.Store(false) // the store is down for both
	waitFor(t, "a sees b lose it", func() bool { return !a.OthersReachStore() })
	waitFor(t, "b sees a lose it", func() bool { return !b.OthersReachStore() })
	reaching.Store(true)
	waitFor(t, "a sees b reach it again", func() bool { return a.OthersReachStore() })

	reaching.Store(false)
	waitFor(t, "a sees b lose it again", func() bool { return !a.OthersReachStore() })
	start(t, ns, "pod-c", clock.RealClock{}, short)
	waitView(t, a, "c is live", members("pod-a", "pod-b", "pod-c"))
	require.True(t, a.OthersReachStore(), "c, which publishes no contact, counts as reaching the store")
}

// waitFor polls ok until it holds; the deadline only ends a test that
// would hang.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	require.Eventually(t, ok, 60*time.Second, 20*time.Millisecond, what)
}
