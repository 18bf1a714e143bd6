package attribution

import (
	"context"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// DefaultGrace is how long a watch event waits for its fact by default,
// also the default of --author-attribution-grace (the chart's
// attribution.grace).
const DefaultGrace = 3 * time.Second

// DefaultSettle is how long after its receipt an event takes a confirmed
// admission candidate when admission is the only source (Resolver.Settle).
const DefaultSettle = 250 * time.Millisecond

// Tier names the evidence a resolution used
// (attribution_resolutions_total{tier}), strongest first.
type Tier string

const (
	// TierDeleteSticky: the object's delete fact, from the sticky slot.
	TierDeleteSticky Tier = "delete_sticky"
	// TierExact: the fact of the write that produced this uid and rv.
	TierExact Tier = "exact"
	// TierDeleteCollectionUID: a deletecollection whose response named
	// this uid.
	TierDeleteCollectionUID Tier = "deletecollection_body_uid"
	// TierLatest: the object's last write fact by uid, for a write that
	// carries no rv. Never a removal's answer: the last writer is not
	// the deleter.
	TierLatest Tier = "latest"
	// TierName: a fact with no uid, by namespace and name (an aggregated
	// API's usual shape).
	TierName Tier = "name"
	// TierDeleteCollectionScope: a deletecollection without a uid set whose
	// namespace and selector cover the object, made within the grace.
	TierDeleteCollectionScope Tier = "deletecollection_scope"
	// TierResourceVersion: a fact with no uid for this exact rv.
	TierResourceVersion Tier = "resource_version"
	// TierAdmission: admission reviews the event confirmed, all by the
	// same actor (candidates.go). Below every audit tier: an audit fact
	// is post-persist and exact, a review precedes a write that may fail.
	TierAdmission Tier = "admission"
	// TierAmbiguous: admission reviews the event confirmed name different
	// actors. Unresolved: the reason is that the evidence disagrees, not
	// that it is missing.
	TierAmbiguous Tier = "ambiguous"
	// TierAbsent: nothing usable arrived in time.
	TierAbsent Tier = "absent"
)

// Tiers are every Tier, for zero series.
var Tiers = []Tier{TierDeleteSticky, TierExact, TierDeleteCollectionUID, TierLatest, TierName,
	TierDeleteCollectionScope, TierResourceVersion, TierAdmission, TierAmbiguous, TierAbsent}

// Query is one watch event to attribute.
type Query struct {
	Stream facts.StreamKey
	// Version is the watch's API version, for metrics only.
	Version         string
	Namespace, Name string
	UID             string
	ResourceVersion string
	// Removal is set for a DELETED event.
	Removal bool
	// Labels are the object's, for the deletecollection scope tier.
	Labels map[string]string
	// Received is when the watch delivered the event; the grace runs from
	// it (now when zero).
	Received time.Time
	// WrittenAt is when the API server says a removal was requested (its
	// deletionTimestamp less the grace period); zero when it has none. An
	// admission review that carries no content digest is confirmed only
	// when it was made about then, or, without it, shortly before the event
	// (reviewedAbout).
	WrittenAt time.Time
	// Created is set for an ADDED event: the only write an admission
	// review of a CREATE may confirm (an update whose previous version the
	// stream does not know also has no PreviousVersion).
	Created bool
	// PreviousVersion is the resourceVersion of the stream's previous event
	// for this object ("" for a create, or when the stream has none).
	PreviousVersion string
	// Digest is sanitize.Digest of the event's object ("" for a removal).
	Digest string
}

// exactCapable: a create or update that carries the uid and rv its own
// write produced, so only a fact for that version can name its author.
func (q Query) exactCapable() bool {
	return !q.Removal && q.UID != "" && q.ResourceVersion != ""
}

// EventKind is "removal" or "write" (attribution_resolution_wait_seconds{event_kind}).
func (q Query) EventKind() string {
	if q.Removal {
		return "removal"
	}
	return "write"
}

// Resolution is who a watch event is attributed to.
type Resolution struct {
	Tier Tier
	// Actor is the zero Actor when Tier is TierAbsent or TierAmbiguous.
	Actor facts.Actor
	// AuditID is the matched fact's, for diagnostics.
	AuditID string
	// Waited is how long Resolve waited for evidence.
	Waited time.Duration
}

// Resolved reports whether an actor was named.
func (r Resolution) Resolved() bool {
	return r.Tier != TierAbsent && r.Tier != TierAmbiguous && r.Tier != ""
}

// ActorKind is "user", "serviceaccount" or "none" (absent), the
// vocabulary of commits_total{author_kind}.
func (r Resolution) ActorKind() string {
	switch {
	case !r.Resolved():
		return "none"
	case strings.HasPrefix(r.Actor.Username, facts.ServiceAccountPrefix):
		return "serviceaccount"
	default:
		return "user"
	}
}

// Resolver attributes watch events from an Index.
//
// The resolver does not reorder: Resolve returns the one event's answer
// and the caller runs one Resolve at a time per watch stream, so the wait
// is head-of-line and an object's events keep their order. Because the
// grace runs from Query.Received, events queued behind a wait do not each
// add a full grace.
type Resolver struct {
	Index *Index
	// Grace bounds the wait for evidence (DefaultGrace when zero).
	Grace time.Duration
	// AdmissionOnly is set when admission reviews are the only facts the
	// index is fed (no audit webhook): an event then takes the candidates
	// it confirms once Settle has passed since it was received, without
	// waiting the rest of the grace for an audit fact that never comes.
	// Unset, candidates are the answer only at the end of the grace: an
	// audit fact, post-persist and exact, wins whenever it arrives in time.
	AdmissionOnly bool
	// Settle is how long, with AdmissionOnly, an event waits after it was
	// received before it takes a confirmed candidate (DefaultSettle when
	// zero), so that a competing review of the same write still on its way
	// through the transport (another replica's, through Redis) makes the
	// answer ambiguous rather than wrong. Reviews precede their writes, so
	// the ones that matter are usually filed before the event arrives.
	// NoSettle: none, for an index every review that can matter is filed
	// in before it is answered (the memory transport, its observer filing
	// into its own index): the write, and so its event, comes only after.
	Settle time.Duration
	// Barrier, when set with AdmissionOnly, ends the settle early: it
	// returns once every fact published to the event's stream before it
	// was called has reached the index (facts.Barrier). A review is
	// published before the write it reviews is stored, so from then on no
	// review of the event's write is still on its way. When it fails or
	// outlasts the settle, the settle's end is when candidates answer.
	Barrier  func(ctx context.Context, stream facts.StreamKey) error
	Clock    clock.Clock
	Observer Observer

	// sleeping, when set, is called each time Resolve is about to sleep
	// (tests wait on it instead of on time).
	sleeping func()
}

func (r *Resolver) grace() time.Duration {
	if r.Grace > 0 {
		return r.Grace
	}
	return DefaultGrace
}

func (r *Resolver) clock() clock.Clock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.RealClock{}
}

// Resolve names the author of the event q describes: at once when the
// index holds an audit answer, else after waiting, without polling, until
// a fact that answers it is applied, the grace ends or ctx ends (decide
// says when admission candidates answer). A removal is answered only by
// deletion evidence: without it the removal is unresolved, however
// recently someone wrote the object.
func (r *Resolver) Resolve(ctx context.Context, q Query) Resolution {
	c := r.clock()
	start := c.Now()
	grace := r.grace()
	received := q.Received
	if received.IsZero() {
		received = start
	}
	graceEnd := received.Add(grace)
	candidatesAt := graceEnd
	if r.AdmissionOnly {
		candidatesAt = received.Add(min(r.settle(), grace))
		if r.awaitBarrier(ctx, q.Stream, candidatesAt) {
			candidatesAt = c.Now()
		}
	}

	keys := waitKeys(q)
	w := r.Index.register(q.Stream, keys)
	defer r.Index.unregister(q.Stream, keys, w)

	var hit *match
	for {
		answer, final, lookAgain := decide(r.Index.lookup(q, grace), c.Now(), candidatesAt, graceEnd, r.AdmissionOnly)
		if final || !r.sleep(ctx, w, lookAgain.Sub(c.Now())) {
			hit = answer
			break
		}
	}
	res := Resolution{Tier: TierAbsent, Waited: c.Since(start)}
	if hit != nil {
		res.Tier = hit.tier
		if hit.fact.Actor != nil {
			res.Actor, res.AuditID = *hit.fact.Actor, hit.fact.AuditID()
		}
	}
	r.observer().Resolved(q, res)
	return res
}

// decide is what the evidence answers at now, and whether that answer is
// final; when it is not, look again by lookAgain (or when a fact wakes
// the waiter). An audit answer wins at once. Admission candidates answer
// from candidatesAt (the grace's end unless admission is the only source),
// or at once when they disagree and no audit fact can come. Past the
// grace's end with nothing, the event is unresolved.
func decide(ev evidence, now, candidatesAt, graceEnd time.Time, admissionOnly bool) (answer *match, final bool, lookAgain time.Time) {
	switch {
	case ev.audit != nil:
		return ev.audit, true, time.Time{}
	case ev.admission != nil && admissionOnly && ev.admission.tier == TierAmbiguous:
		return ev.admission, true, time.Time{}
	case ev.admission != nil && !now.Before(candidatesAt):
		return ev.admission, true, time.Time{}
	case ev.admission != nil:
		return nil, false, candidatesAt
	case !now.Before(graceEnd):
		return nil, true, time.Time{}
	}
	return nil, false, graceEnd
}

// sleep waits until a wake, d passes or ctx ends; false when ctx ended
// (the answer is then what the index held last).
func (r *Resolver) sleep(ctx context.Context, w *waiter, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := r.clock().NewTimer(d)
	defer timer.Stop()
	if r.sleeping != nil {
		r.sleeping()
	}
	select {
	case <-w.wake:
	case <-timer.C():
	case <-ctx.Done():
		return false
	}
	return true
}

// awaitBarrier runs the Barrier until it returns or until, on the
// resolver's clock, passes: true when it returned without an error before
// the settle's end. It is not run when the settle is already over.
func (r *Resolver) awaitBarrier(ctx context.Context, stream facts.StreamKey, until time.Time) bool {
	if r.Barrier == nil {
		return false
	}
	d := until.Sub(r.clock().Now())
	if d <= 0 {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := r.clock().NewTimer(d)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	err := r.Barrier(ctx, stream)
	r.observer().SettleBarrier(err == nil)
	return err == nil
}

// NoSettle is Resolver.Settle for an event that takes a confirmed
// candidate at once.
const NoSettle time.Duration = -1

func (r *Resolver) settle() time.Duration {
	switch {
	case r.Settle < 0:
		return 0
	case r.Settle > 0:
		return r.Settle
	}
	return DefaultSettle
}

func (r *Resolver) observer() Observer {
	if r.Observer != nil {
		return r.Observer
	}
	return NopObserver{}
}

// waitKeys are every key a fact that could answer q is filed under.
func waitKeys(q Query) []slotKey {
	var keys []slotKey
	if q.Removal {
		if q.UID != "" {
			keys = append(keys, uidKey(q.UID)) // the sticky slot
		}
		keys = append(keys, namespaceKey(q.Namespace))
		if q.Namespace != "" {
			keys = append(keys, namespaceKey(""))
		}
	} else {
		if q.exactCapable() {
			keys = append(keys, uidRVKey(q.UID, q.ResourceVersion))
		} else if q.UID != "" {
			keys = append(keys, uidKey(q.UID))
		}
		if q.Created && q.Name != "" {
			keys = append(keys, candidateNameKey(q.Namespace, q.Name))
		}
	}
	if q.UID != "" {
		keys = append(keys, candidateUIDKey(q.UID))
	}
	if q.Name != "" {
		keys = append(keys, nameKey(q.Namespace, q.Name))
	}
	if q.ResourceVersion != "" {
		keys = append(keys, rvKey(q.ResourceVersion))
	}
	return keys
}
