package ha

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Claims are the per-branch claims in the shared store
// (redisstore.Claims): the fence between two replicas whose views briefly
// disagree. Branches are named by BranchKey.String().
type Claims interface {
	// TryAcquire claims branch for token; when another token holds it,
	// heldFor is how long that claim has left unless renewed.
	TryAcquire(ctx context.Context, branch, token string, ttl time.Duration) (won bool, heldFor time.Duration, err error)
	Renew(ctx context.Context, token string, branches []string, ttl time.Duration) (lost []string, err error)
	Release(ctx context.Context, branch, token string) (bool, error)
}

// Host runs the work of the branches this replica owns (the engine).
type Host interface {
	// Branches are the branches of every GitTarget this replica knows of,
	// owned or not: what the assignment spreads.
	Branches() []BranchKey
	// Take starts a branch just claimed (its GitTargets are reconciled,
	// their watches resume, its journal is restored).
	Take(key BranchKey)
	// Release stops a branch's work and returns once it is stopped.
	// Graceful: its worker commits what it holds first (a handover);
	// otherwise its claim is lost and it stops at once, committing
	// nothing (the journal keeps its writes for the next owner).
	Release(ctx context.Context, key BranchKey, graceful bool)
}

// Members is what the owner reads of Membership.
type Members interface {
	Current() (View, <-chan struct{})
	// OthersReachStore: another live member reaches the shared store (a
	// cut-off of this replica, not an outage of the store for all).
	OthersReachStore() bool
	Suspend()
	Resume()
	Leave(ctx context.Context) error
}

// AssignerConfig configures an Assigner. Members, Claims, Host and Token are
// required.
type AssignerConfig struct {
	Members Members
	Claims  Claims
	Host    Host
	// Token is this process's claim token: the replica identity and a
	// value new for every start, so a restarted pod of the same name does
	// not inherit claims its previous process held.
	Token string
	// ClaimTTL is how long a claim outlives its last renewal: the Lease
	// duration, so a crashed owner's branches are free about when the
	// others count it dead. Default 15 s.
	ClaimTTL time.Duration
	// RenewPeriod is how often the claims are renewed (one round trip for
	// all of them). Default 2 s.
	RenewPeriod time.Duration
	// RenewDeadline is how long renewals may fail before this replica
	// gives up every branch and suspends its membership: below ClaimTTL, so
	// it stops before another replica can win its claims. Default 10 s.
	RenewDeadline time.Duration
	// Ping checks the shared store while no claim is held (Renew of none
	// sends nothing); nil skips it.
	Ping func(ctx context.Context) error
	// Drop deletes the journal of a branch no GitTarget writes any more,
	// while token still holds its claim (redisstore.Journal.DropSettled); nil
	// leaves it.
	Drop     func(ctx context.Context, branch, token string) error
	Clock    clock.WithTicker
	Observer Observer
	Log      logr.Logger
}

// Assigner acts on the views of Membership: it releases what the assignment
// gives to another member, claims and takes what it gives to this one,
// keeps its claims renewed, and gives every branch up (suspending its
// membership) when it cannot renew them in time. Owns answers the
// reconcilers; Kick tells it the set of branches changed.
type Assigner struct {
	cfg  AssignerConfig
	kick chan struct{}

	mu    sync.Mutex
	owned map[BranchKey]bool
	// contact is when the store last answered (StoreContact); zero before
	// it ever did.
	contact time.Time

	// loop state, touched only by Run's goroutine
	lastRenewed time.Time
	fenced      bool
	// outage: the store is down for every replica, and this one runs its
	// branches from memory (renew).
	outage bool
	// ownerBefore is, for each branch another member owned, that member as
	// of the last view it was live in; departed are the departures seen,
	// by member. A take is a handover from ownerBefore, counted (and a
	// failover timed) even when the claim is won periods after the view
	// that moved the branch.
	ownerBefore map[BranchKey]string
	departed    map[string]Departure
	// retryIn is when the last assign's lost takes are tried again, when
	// that comes before the next renew period (zero: at that period).
	retryIn time.Duration
}

// NewAssigner fills cfg's defaults.
func NewAssigner(cfg AssignerConfig) (*Assigner, error) {
	if cfg.Members == nil || cfg.Claims == nil || cfg.Host == nil || cfg.Token == "" {
		return nil, errors.New("an HA assigner needs its membership, claims, host and token")
	}
	if cfg.ClaimTTL <= 0 {
		cfg.ClaimTTL = 15 * time.Second
	}
	if cfg.RenewPeriod <= 0 {
		cfg.RenewPeriod = 2 * time.Second
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = 10 * time.Second
	}
	if cfg.RenewDeadline >= cfg.ClaimTTL {
		return nil, errors.New("an HA assigner's renew deadline must be below its claim TTL")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Observer == nil {
		cfg.Observer = NopObserver{}
	}
	return &Assigner{cfg: cfg, kick: make(chan struct{}, 1), owned: map[BranchKey]bool{},
		ownerBefore: map[BranchKey]string{}, departed: map[string]Departure{}}, nil
}

// Owns reports whether this replica owns key now.
func (o *Assigner) Owns(key BranchKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.owned[key]
}

// Assigned reports whether rendezvous gives key to this replica in the
// current view, claimed or not.
func (o *Assigner) Assigned(key BranchKey) bool {
	view, _ := o.cfg.Members.Current()
	return view.SelfLive && Owner(view.Members, key) == view.Self
}

// Token is this process's claim token (AssignerConfig.Token).
func (o *Assigner) Token() string { return o.cfg.Token }

// Kick asks for the assignment to be decided again: a GitTarget appeared,
// moved to another branch, or went away. It never blocks.
func (o *Assigner) Kick() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// Run acts on every view, kick and renew period until ctx ends, then hands
// every branch over (its worker commits what it holds, its claim is
// released) and leaves the membership, so the others take over at once.
func (o *Assigner) Run(ctx context.Context) error {
	o.lastRenewed = o.cfg.Clock.Now()
	tick := o.cfg.Clock.NewTicker(o.cfg.RenewPeriod)
	defer tick.Stop()
	if o.cfg.Ping != nil {
		contactCtx, stopContact := context.WithCancel(ctx)
		defer stopContact()
		go o.keepContact(contactCtx)
	}
	for {
		view, changed := o.cfg.Members.Current()
		o.assign(ctx, view)
		retry, stopRetry := o.retryTimer()
		select {
		case <-ctx.Done():
			stopRetry()
			o.handOverAll()
			return nil
		case <-changed:
		case <-o.kick:
		case <-retry:
		case <-tick.C():
			o.renew(ctx)
		}
		stopRetry()
	}
}

// claimRetryMargin is how long after a claim's expiry a lost take is tried
// again: Redis expires a key exactly when it is read past its TTL, so the
// margin only covers timer slack.
const claimRetryMargin = 10 * time.Millisecond

// retryTimer fires when the last assign's lost takes should be tried
// again before the next renew period: a crashed owner's claim, renewed up
// to a period after its Lease, can outlive the Lease that the view
// dropped it by, and waiting for the period would add up to 2 s to the
// failover. nil (never) when nothing lost or the period comes first.
func (o *Assigner) retryTimer() (<-chan time.Time, func()) {
	if o.retryIn <= 0 {
		return nil, func() {}
	}
	t := o.cfg.Clock.NewTimer(o.retryIn)
	return t.C(), func() { t.Stop() }
}

// noteHeld records a take lost to a claim with heldFor left: its retry
// comes just after it runs out, if that is before the next period.
func (o *Assigner) noteHeld(heldFor time.Duration) {
	retry := heldFor + claimRetryMargin
	if retry < o.cfg.RenewPeriod && (o.retryIn == 0 || retry < o.retryIn) {
		o.retryIn = retry
	}
}

// assign releases, then takes, what Decide says under view. A branch whose
// claim another replica still holds (its release is under way, or it
// crashed and the claim has not expired) is tried again next period.
// Handovers are counted by the replica that takes the branch, by why its
// previous owner let it go (handoverCause).
func (o *Assigner) assign(ctx context.Context, view View) {
	if view.Version == 0 {
		return // before the first view: not even this replica is known
	}
	for _, d := range view.Left {
		o.departed[d.Member] = d
	}
	branches := o.cfg.Host.Branches()
	take, release := Decide(view, branches, o.snapshot())
	for _, k := range release {
		if !slices.Contains(branches, k) {
			o.retire(ctx, k)
			continue
		}
		o.release(ctx, k, true)
	}
	o.retryIn = 0
	for _, k := range take {
		won, heldFor, err := o.cfg.Claims.TryAcquire(ctx, k.String(), o.cfg.Token, o.cfg.ClaimTTL)
		if err != nil {
			o.cfg.Log.Error(err, "claiming a branch; trying again next period", "branch", k.String())
			continue
		}
		if !won {
			o.noteHeld(heldFor)
			continue
		}
		o.setOwned(k, true)
		o.cfg.Host.Take(k)
		cause, departure := o.handoverCause(view, k)
		if cause != "" {
			o.cfg.Observer.Handover(cause)
		}
		if departure != nil && departure.Cause != CauseGraceful {
			o.cfg.Observer.Failover(o.cfg.Clock.Since(departure.LastRenewed))
		}
		delete(o.ownerBefore, k)
		o.cfg.Log.Info("took the branch", "branch", k.String(), "cause", string(cause))
	}
	o.noteOwners(view, branches)
	o.cfg.Observer.Owned(o.count())
}

// handoverCause is why the branch k just taken left its previous owner:
// that owner's departure (graceful, member_lost), or member_joined when it
// is still live (this replica joined and won the branch); "" for a branch
// nobody owned before (a replica's first assignment, a new GitTarget).
func (o *Assigner) handoverCause(view View, k BranchKey) (Cause, *Departure) {
	before, ok := o.ownerBefore[k]
	if !ok {
		return "", nil
	}
	if view.Has(before) {
		return CauseMemberJoined, nil
	}
	if d, ok := o.departed[before]; ok {
		return d.Cause, &d
	}
	return CauseMemberLost, nil
}

// noteOwners records, for every branch another live member owns under
// view, that member: the owner a later take hands the branch over from.
func (o *Assigner) noteOwners(view View, branches []BranchKey) {
	for _, k := range branches {
		if owner := Owner(view.Members, k); owner != "" && owner != view.Self && !o.Owns(k) {
			o.ownerBefore[k] = owner
			delete(o.departed, owner) // live again: an old departure no longer says why
		}
	}
}

// renew keeps the claims alive. A claim lost (expired, or taken after a
// long cut-off) stops its branch at once, unless nobody holds it and this
// replica wins it again (after an outage of the store). Renewals failing
// for RenewDeadline are judged by storeFailed.
func (o *Assigner) renew(ctx context.Context) {
	owned := o.snapshot()
	names := make([]string, 0, len(owned))
	byName := make(map[string]BranchKey, len(owned))
	for k := range owned {
		names = append(names, k.String())
		byName[k.String()] = k
	}
	var lost []string
	var err error
	switch {
	case len(names) > 0:
		lost, err = o.cfg.Claims.Renew(ctx, o.cfg.Token, names, o.cfg.ClaimTTL)
	case o.cfg.Ping != nil:
		err = o.cfg.Ping(ctx)
	default:
		return // nothing held and no way to look: no news of the store
	}
	now := o.cfg.Clock.Now()
	if err != nil {
		if now.Sub(o.lastRenewed) >= o.cfg.RenewDeadline {
			o.storeFailed(ctx, err, owned)
		}
		return
	}
	o.lastRenewed = now
	o.mu.Lock()
	o.contact = now
	o.mu.Unlock()
	if o.fenced {
		o.fenced = false
		o.cfg.Members.Resume()
	}
	if o.outage {
		o.outage = false
		o.cfg.Observer.StoreOutage(false)
		o.cfg.Log.Info("the shared store answers again: claiming the branches run through the outage again")
	}
	for _, name := range lost {
		won, _, aerr := o.cfg.Claims.TryAcquire(ctx, name, o.cfg.Token, o.cfg.ClaimTTL)
		if aerr != nil || won {
			// Won back (it had expired and nobody took it), or Redis failed
			// again: the branch runs on and the next renewal looks again.
			continue
		}
		o.cfg.Log.Info("lost the claim on a branch: stopping it without committing", "branch", name)
		o.release(ctx, byName[name], false)
	}
}

// storeFailed decides, once renewals have failed for RenewDeadline,
// between the two things that look alike from here: a
// store cut off from this replica only, whose branches the others may take
// once its claims expire, so it gives every branch up without committing
// and suspends its membership before they can; and a store down for every
// replica, which nobody can take a branch through, so it runs its
// branches on from memory (the forge's compare-and-swap still fences Git)
// until the store is back or another replica reaches it again.
func (o *Assigner) storeFailed(ctx context.Context, err error, owned map[BranchKey]bool) {
	if o.fenced {
		return
	}
	if !o.cfg.Members.OthersReachStore() {
		if !o.outage {
			o.outage = true
			o.cfg.Observer.StoreOutage(true)
			o.cfg.Log.Error(err, "the shared store is unreachable for every replica: running the branches from memory until it is back")
		}
		return
	}
	if o.outage {
		o.outage = false
		o.cfg.Observer.StoreOutage(false)
	}
	o.cfg.Log.Error(err, "the shared store is unreachable from this replica: giving every branch up until it is back")
	o.fenced = true
	o.cfg.Members.Suspend()
	for k := range owned {
		o.release(ctx, k, false)
		o.cfg.Observer.Handover(CauseRedisLost)
	}
}

// keepContact pings the store every renew period apart from the loop that
// assigns and renews, so the contact every Lease renewal publishes stays
// fresh while a handover keeps that loop busy (a graceful release waits
// for the worker's last push): the others must not take a busy replica
// for one cut off from Redis (OthersReachStore).
func (o *Assigner) keepContact(ctx context.Context) {
	tick := o.cfg.Clock.NewTicker(o.cfg.RenewPeriod)
	defer tick.Stop()
	for {
		if o.cfg.Ping(ctx) == nil {
			o.mu.Lock()
			o.contact = o.cfg.Clock.Now()
			o.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// StoreContact is when the shared store last answered this replica; zero
// before it ever did (Config.StoreContact of the Membership).
func (o *Assigner) StoreContact() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.contact
}

// release stops k and gives its claim up (a lost claim has none to give).
func (o *Assigner) release(ctx context.Context, k BranchKey, graceful bool) {
	o.cfg.Host.Release(ctx, k, graceful)
	o.setOwned(k, false)
	if !graceful {
		return
	}
	if _, err := o.cfg.Claims.Release(ctx, k.String(), o.cfg.Token); err != nil {
		// The claim expires after ClaimTTL; the next owner waits that long.
		o.cfg.Log.Error(err, "releasing the claim on a branch", "branch", k.String())
	}
}

// retire stops a branch no GitTarget writes any more (its last one was
// deleted or moved to another branch): its worker commits what it holds,
// then its journal is dropped while the claim still fences it, and the
// claim is released. Nothing is left in the store for a branch that may
// never come back.
func (o *Assigner) retire(ctx context.Context, k BranchKey) {
	o.cfg.Host.Release(ctx, k, true)
	o.setOwned(k, false)
	if o.cfg.Drop != nil {
		if err := o.cfg.Drop(ctx, k.String(), o.cfg.Token); err != nil {
			o.cfg.Log.Error(err, "dropping the journal of a branch no GitTarget writes", "branch", k.String())
		}
	}
	if _, err := o.cfg.Claims.Release(ctx, k.String(), o.cfg.Token); err != nil {
		o.cfg.Log.Error(err, "releasing the claim on a branch", "branch", k.String())
	}
}

// handOverAll is the graceful shutdown: every branch committed and
// released, then the Lease deleted so the others count this replica gone
// at once rather than a Lease duration later.
func (o *Assigner) handOverAll() {
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.ClaimTTL)
	defer cancel()
	for k := range o.snapshot() {
		o.release(ctx, k, true) // counted by the replica that takes it
	}
	o.cfg.Observer.Owned(0)
	if err := o.cfg.Members.Leave(ctx); err != nil {
		o.cfg.Log.Error(err, "leaving the membership; the others wait for the Lease to expire")
	}
}

func (o *Assigner) snapshot() map[BranchKey]bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[BranchKey]bool, len(o.owned))
	for k := range o.owned {
		out[k] = true
	}
	return out
}

func (o *Assigner) setOwned(k BranchKey, own bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if own {
		o.owned[k] = true
	} else {
		delete(o.owned, k)
	}
}

func (o *Assigner) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.owned)
}
