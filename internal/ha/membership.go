package ha

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// controller-runtime's leader-election cadence, the defaults.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultGroup names the member Leases of an installation.
	DefaultGroup = "gitops-reverser"
)

// GroupLabel is on every member Lease; its value is the Group. The
// informer selects the members by it, so two installations in one
// namespace keep separate memberships.
const GroupLabel = "gitops-reverser.configbutler.ai/ha-group"

// LeaseVerbs are the verbs a Membership uses on coordination.k8s.io
// leases in its namespace (read and renew its own, watch the others',
// delete its own on Leave and a dead member's on collection): the
// operator's Role must grant them.
var LeaseVerbs = []string{"get", "list", "watch", "create", "update", "delete"}

// Config configures a Membership. Client, Namespace and Identity are
// required; the rest has defaults.
type Config struct {
	Client kubernetes.Interface
	// Namespace holds the member Leases (the operator namespace).
	Namespace string
	// Identity is this replica's name among the members (the pod name).
	Identity string
	// Group is the GroupLabel value; the Lease is named Group-Identity.
	Group string
	// LeaseDuration is how long the others wait, by their own clocks,
	// after they first saw a renewal before they count this replica dead.
	LeaseDuration time.Duration
	// RenewDeadline is how long this replica counts itself live after it
	// sent its last successful renewal; it must be below LeaseDuration.
	RenewDeadline time.Duration
	// RetryPeriod is the renew period: one Lease write per period.
	RetryPeriod time.Duration
	// CollectAfter is how long a dead member's Lease stays after it
	// expired before the first live member deletes it (a crashed pod's
	// Lease would stay forever otherwise: pod names are not reused).
	// Default: 4 × LeaseDuration.
	CollectAfter time.Duration
	// StoreContact, when set, is when this replica last reached the shared
	// store (Assigner.StoreContact); every renewal publishes it on the
	// Lease (StoreContactAnnotation), so the replicas can tell a store
	// cut off from one of them from a store down for all (OthersReachStore).
	StoreContact func() time.Time
	Clock        clock.Clock
	Observer     Observer
	Log          logr.Logger
}

// Observer is told about membership, for metrics (internal/metrics
// implements it). Membership reports Members; the owner code that acts on
// Decide reports the rest.
type Observer interface {
	// Members: the live members in this replica's latest view.
	Members(n int)
	// Owned: the branches this replica owns now.
	Owned(n int)
	// Handover: one branch changed owner, for cause.
	Handover(cause Cause)
	// Failover: from a lost owner's last renewal to a new owner taking
	// its branch.
	Failover(d time.Duration)
	// StoreOutage: this replica runs its branches from memory because
	// the shared store is down for every replica (true), or no longer
	// (false).
	StoreOutage(on bool)
}

// NopObserver observes nothing.
type NopObserver struct{}

func (NopObserver) Members(int)            {}
func (NopObserver) Owned(int)              {}
func (NopObserver) Handover(Cause)         {}
func (NopObserver) Failover(time.Duration) {}
func (NopObserver) StoreOutage(bool)       {}

// Membership keeps this replica's Lease renewed and publishes the live
// members as Views. Build it with New, run it with Run; Leave on graceful
// shutdown, Suspend and Resume while the shared store is unreachable.
//
// A renewal is one write (an update of the Lease, or its create), at most
// one per RetryPeriod whatever the number of branches; it never blocks the
// view, so a hanging API server still fences this replica on time.
type Membership struct {
	cfg       Config
	leaseName string

	// renewMu serialises renewals with Leave, so a renewal in flight cannot
	// create the Lease again after Leave deleted it.
	renewMu sync.Mutex
	// lease is our Lease as last written or read (nil: read it first).
	lease *coordinationv1.Lease

	mu       sync.Mutex
	self     selfState
	observed map[string]observation // by Lease name
	gone     map[string]bool        // members whose Lease was deleted, until the next view
	lastSeen map[string]time.Time   // by member: when its last renewal was first seen
	synced   bool
	view     View
	changed  chan struct{} // closed and replaced on every new view

	poke   chan struct{} // re-evaluate the view now
	resume chan struct{} // renew now
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Membership, error) {
	if cfg.Client == nil || cfg.Namespace == "" || cfg.Identity == "" {
		return nil, errors.New("ha membership needs a client, a namespace and an identity")
	}
	cfg = withDefaults(cfg)
	if errs := validation.IsDNS1123Subdomain(LeaseName(cfg.Group, cfg.Identity)); len(errs) > 0 {
		return nil, fmt.Errorf("ha membership: lease name %q: %s", LeaseName(cfg.Group, cfg.Identity), strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(cfg.Group); len(errs) > 0 {
		return nil, fmt.Errorf("ha membership: group %q: %s", cfg.Group, strings.Join(errs, "; "))
	}
	if cfg.RenewDeadline >= cfg.LeaseDuration || cfg.RetryPeriod >= cfg.RenewDeadline || cfg.RetryPeriod <= 0 {
		return nil, fmt.Errorf("ha membership needs 0 < RetryPeriod (%s) < RenewDeadline (%s) < LeaseDuration (%s)",
			cfg.RetryPeriod, cfg.RenewDeadline, cfg.LeaseDuration)
	}
	return &Membership{
		cfg:       cfg,
		leaseName: LeaseName(cfg.Group, cfg.Identity),
		observed:  map[string]observation{},
		gone:      map[string]bool{},
		lastSeen:  map[string]time.Time{},
		view:      View{Self: cfg.Identity},
		changed:   make(chan struct{}),
		poke:      make(chan struct{}, 1),
		resume:    make(chan struct{}, 1),
	}, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Group == "" {
		cfg.Group = DefaultGroup
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.CollectAfter == 0 {
		cfg.CollectAfter = 4 * cfg.LeaseDuration
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Observer == nil {
		cfg.Observer = NopObserver{}
	}
	return cfg
}

// LeaseName is the name of a member's Lease.
func LeaseName(group, identity string) string { return group + "-" + identity }

// Run, once per Membership, renews the Lease, watches the members' Leases and publishes views
// until ctx ends, then returns nil (an error only when it cannot start).
// It returns without deleting the Lease (the others see this replica
// expire); call Leave first for a graceful exit. The first
// view comes once the members' Leases are listed, so a starting replica
// never sees itself alone while others are live.
func (m *Membership) Run(ctx context.Context) error {
	informer := m.informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.observe(obj) },
		UpdateFunc: func(_, obj any) { m.observe(obj) },
		DeleteFunc: m.forget,
	}); err != nil {
		return fmt.Errorf("watching member leases: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() { defer wg.Done(); informer.Run(ctx.Done()) }()
	go func() { defer wg.Done(); m.renewLoop(ctx) }()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // ctx ended first
	}
	m.mu.Lock()
	m.synced = true
	m.mu.Unlock()
	m.viewLoop(ctx)
	return nil
}

// informer lists and watches the member Leases of our group.
func (m *Membership) informer() cache.SharedIndexInformer {
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	selector := GroupLabel + "=" + m.cfg.Group
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return leases.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformer(lw, &coordinationv1.Lease{}, 0, cache.Indexers{})
}

// observe records a member Lease's renewal, with the time we first saw it.
func (m *Membership) observe(obj any) {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	member := memberOf(lease, m.cfg.Group)
	renewal := renewalOf(lease)
	m.mu.Lock()
	o, known := m.observed[lease.Name]
	if !known || o.renewal != renewal || o.member != member {
		now := m.cfg.Clock.Now()
		o = observation{member: member, renewal: renewal, firstSeen: now, duration: m.durationOf(lease),
			reachesStore: reachesStore(lease, 2*m.cfg.RetryPeriod)}
		m.lastSeen[member] = now
		delete(m.gone, member)
	}
	o.uid, o.resourceVersion = string(lease.UID), lease.ResourceVersion
	m.observed[lease.Name] = o
	m.mu.Unlock()
	m.kick()
}

// forget drops a deleted Lease: its member left on purpose.
func (m *Membership) forget(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	m.mu.Lock()
	if o, known := m.observed[lease.Name]; known {
		delete(m.observed, lease.Name)
		m.gone[o.member] = true
	}
	m.mu.Unlock()
	m.kick()
}

// memberOf is the member a Lease stands for: its holder, else its name
// without the group prefix.
func memberOf(lease *coordinationv1.Lease, group string) string {
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		return *h
	}
	return strings.TrimPrefix(lease.Name, group+"-")
}

// renewalOf identifies one renewal of a Lease. Only a change of it counts
// as a sign of life; its value is never compared with our clock.
func renewalOf(lease *coordinationv1.Lease) string {
	if t := lease.Spec.RenewTime; t != nil {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return "resourceVersion " + lease.ResourceVersion
}

// reachesStore reads a member's Lease: whether the store contact it
// published is within lag of the renewal it published with it. A member
// that reaches the store answers a renewal of its claims every renew
// period, so two periods is generous for it; one that lost the store lags
// by more as soon as it renews once more, well before another replica's
// RenewDeadline runs out. A Lease without a contact (a replica of an older
// release) counts as reaching it.
func reachesStore(lease *coordinationv1.Lease, lag time.Duration) bool {
	value, ok := lease.Annotations[StoreContactAnnotation]
	if !ok || lease.Spec.RenewTime == nil {
		return true
	}
	if value == "" {
		return false // it never reached the store since it started
	}
	contact, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return true
	}
	return lease.Spec.RenewTime.Sub(contact) <= lag
}

// durationOf is the lease duration its holder promised, else ours.
func (m *Membership) durationOf(lease *coordinationv1.Lease) time.Duration {
	if s := lease.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second
	}
	return m.cfg.LeaseDuration
}

func (m *Membership) kick() {
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

// viewLoop publishes a new view whenever the members change: on a Lease
// event, a renewal's result, or the clock reaching the next expiry.
func (m *Membership) viewLoop(ctx context.Context) {
	timer := m.cfg.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := m.evaluate()
		timer.Stop()
		var expiry <-chan time.Time
		if !next.IsZero() {
			timer.Reset(max(next.Sub(m.cfg.Clock.Now()), 0))
			expiry = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-m.poke:
		case <-expiry:
		}
	}
}

// evaluate publishes the view if its members changed and returns when the
// clock alone can change them next.
func (m *Membership) evaluate() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.synced {
		return time.Time{}
	}
	now := m.cfg.Clock.Now()
	members, next := liveMembers(now, m.cfg.Identity, m.self, m.cfg.RenewDeadline, m.observed)
	if m.view.Version > 0 && slices.Equal(members, m.view.Members) {
		return next
	}
	joined, left := diff(m.view.Members, members, m.cfg.Identity, m.self, m.gone,
		func(member string) time.Time {
			if member == m.cfg.Identity {
				return m.self.lastRenew
			}
			return m.lastSeen[member]
		})
	for _, d := range left {
		if d.Member != m.cfg.Identity {
			delete(m.lastSeen, d.Member)
		}
	}
	m.gone = map[string]bool{}
	m.view = View{
		Version:  m.view.Version + 1,
		Members:  members,
		Self:     m.cfg.Identity,
		SelfLive: selfLive(now, m.self, m.cfg.RenewDeadline),
		Joined:   joined,
		Left:     left,
	}
	close(m.changed)
	m.changed = make(chan struct{})
	m.cfg.Observer.Members(len(members))
	return next
}

// Current is the latest view (Version 0 before the first) and a channel
// closed once a newer one is published. Any number of readers may wait on
// it; none can miss the latest view.
func (m *Membership) Current() (View, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view, m.changed
}

// Views sends the latest view on the returned channel whenever a new one
// is published, until ctx ends. A slow reader skips to the newest view.
func (m *Membership) Views(ctx context.Context) <-chan View {
	out := make(chan View, 1)
	go func() {
		defer close(out)
		var sent uint64
		for {
			v, changed := m.Current()
			if v.Version > sent {
				select {
				case <-out: // replace the unread older view
				default:
				}
				out <- v
				sent = v.Version
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return out
}

// OthersReachStore reports whether another live member reached the shared
// store shortly before its last renewal (reachesStore), by the times it
// published on its Lease (its own clock for both, so the members' clocks
// need not agree). A member that publishes no contact counts as reaching
// it: a replica then gives its branches up as it always did, the safe way.
func (m *Membership) OthersReachStore() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Clock.Now()
	for _, o := range m.observed {
		if o.member != m.cfg.Identity && now.Before(o.expiresAt()) && o.reachesStore {
			return true
		}
	}
	return false
}

// Suspend stops renewing and drops this replica from its own view at once,
// for as long as it cannot reach the shared store: its owner code releases
// its branches before the others, LeaseDuration later, take them.
func (m *Membership) Suspend() {
	m.mu.Lock()
	m.self.suspended = true
	m.mu.Unlock()
	m.kick()
}

// Resume renews again at once (that renewal may come less than a period
// after the last: Resume is rare, and the budget is per steady period);
// this replica is back in its own view after
// that renewal succeeds (or at once, if its last one is younger than
// RenewDeadline).
func (m *Membership) Resume() {
	m.mu.Lock()
	m.self.suspended = false
	m.mu.Unlock()
	select {
	case m.resume <- struct{}{}:
	default:
	}
	m.kick()
}
