// Package attribution joins watch events to the attribution facts the audit
// ingress published (architecture.md, "Optional attribution"): the Index
// keeps the facts of the streams this process follows, bounded and TTL'd,
// the Resolver finds the author of one watch event in it, waiting a short
// grace for a fact still in flight, and the Follower feeds the Index from a
// facts.Transport. The watch stream calls the Resolver; nothing here calls
// the watch.
package attribution

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Defaults for the zero fields of an Index.
const (
	DefaultTTL          = 5 * time.Minute
	DefaultMaxPerStream = 50_000
	DefaultMaxTotal     = 200_000
)

// Index files each applied fact under the strongest key it has, first
// match wins, within its stream (audit route, group/resource):
//
//   - (uid, rv) and (uid) together when it has both, else (uid), else
//     (rv), else (namespace, name); last writer wins per key, by stage time;
//   - a removal (a delete with a uid, or a uid in a deletecollection's
//     set) also takes the uid's sticky removal slot, which write facts
//     never reach and the TTL does not bound (only the caps do): the
//     earliest removal by stage time keeps it;
//   - a deletecollection whose response named no uids is filed by
//     namespace, for the scope tier.
//
// Expiry is checked on read, so an aged-out fact is never returned before
// a sweep drops it. Apply trims expired facts from the oldest end;
// StartSweeping sweeps them all periodically. The caps evict the oldest
// applied facts.
//
// Set the fields before first use; an Index is safe for concurrent use
// (Apply from followers, lookups from many watch goroutines).
type Index struct {
	// TTL bounds how long a fact is joinable after its stage time.
	TTL time.Duration
	// MaxPerStream and MaxTotal cap the facts held per stream and overall.
	MaxPerStream, MaxTotal int
	Clock                  clock.WithTicker
	Observer               Observer

	mu      sync.RWMutex
	streams map[facts.StreamKey]*streamIndex
	// order holds every entry, oldest applied first (the total cap).
	order entryList
	// ttlOrder holds the entries still filed under TTL'd keys, oldest
	// applied first (the sweep).
	ttlOrder entryList

	// actors are the actors the records share (under mu).
	actors map[actorKey]*facts.Actor

	waitMu  sync.Mutex
	waiters map[waitKey]map[*waiter]struct{}
}

// slotKind names one of the TTL'd last-writer-wins key spaces.
type slotKind uint8

const (
	slotUIDRV slotKind = iota
	slotUID
	slotRV
	slotName
	// slotNamespace is a waiter key only: collections filed for the scope
	// tier live in streamIndex.collections.
	slotNamespace
)

type slotKey struct {
	kind slotKind
	a, b string
}

func uidRVKey(uid, rv string) slotKey { return slotKey{kind: slotUIDRV, a: uid, b: rv} }
func uidKey(uid string) slotKey       { return slotKey{kind: slotUID, a: uid} }
func rvKey(rv string) slotKey         { return slotKey{kind: slotRV, a: rv} }
func nameKey(namespace, name string) slotKey {
	return slotKey{kind: slotName, a: namespace, b: name}
}
func namespaceKey(namespace string) slotKey { return slotKey{kind: slotNamespace, a: namespace} }

type streamIndex struct {
	key   facts.StreamKey
	slots map[slotKey]*entry
	// removals is the sticky slot: uid → the earliest removal naming it.
	removals map[string]*entry
	// collections are the deletecollections without a uid set, by namespace.
	collections map[string][]*entry
	byAuditID   map[string]*entry
	// order holds the stream's entries, oldest applied first (the type cap).
	order entryList
}

// entry is one applied fact and the places it is filed.
type entry struct {
	fact    record
	stream  *streamIndex
	expires time.Time
	// slots are the TTL'd keys it was filed under; it may since have lost
	// some of them to a later writer.
	slots []slotKey
	// removalUIDs are the uids whose sticky slot it was put in.
	removalUIDs []string
	// held counts the places that still point at it; at zero it is gone.
	held                 int
	all, inStream, inTTL link
}

func (e *entry) expired(now time.Time) bool { return !now.Before(e.expires) }

func (x *Index) ttl() time.Duration {
	if x.TTL > 0 {
		return x.TTL
	}
	return DefaultTTL
}

func (x *Index) clock() clock.WithTicker {
	if x.Clock != nil {
		return x.Clock
	}
	return clock.RealClock{}
}

func (x *Index) observer() Observer {
	if x.Observer != nil {
		return x.Observer
	}
	return NopObserver{}
}

func capOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Apply files the facts of stream. A fact already filed (same audit id)
// is skipped, so a follower that re-reads a stream after a reconnect does
// no harm. It wakes every waiter registered under a key it filed.
func (x *Index) Apply(stream facts.StreamKey, fs []facts.Fact) {
	var woken []slotKey
	x.mu.Lock()
	now := x.clock().Now()
	s := x.stream(stream)
	written := 0
	for _, f := range fs {
		keys, ok := x.file(s, f, now)
		if ok {
			written++
			woken = append(woken, keys...)
		}
	}
	x.enforceCaps(s)
	x.trimExpired(now)
	entries := x.order.Len()
	x.mu.Unlock()

	if written > 0 {
		x.observer().FactsWritten(written)
	}
	x.observer().IndexEntries(entries)
	x.wake(stream, woken)
}

func (x *Index) stream(key facts.StreamKey) *streamIndex {
	if x.streams == nil {
		x.streams = map[facts.StreamKey]*streamIndex{}
		x.order.at, x.ttlOrder.at = allLink, ttlLink
	}
	s := x.streams[key]
	if s == nil {
		s = &streamIndex{key: key, slots: map[slotKey]*entry{}, removals: map[string]*entry{},
			collections: map[string][]*entry{}, byAuditID: map[string]*entry{}, order: entryList{at: streamLink}}
		x.streams[key] = s
	}
	return s
}

// file files one fact and returns the waiter keys it may answer; false
// when the fact was a duplicate or had no key to be read by.
func (x *Index) file(s *streamIndex, f facts.Fact, now time.Time) ([]slotKey, bool) {
	if f.AuditID != "" && s.byAuditID[f.AuditID] != nil {
		return nil, false
	}
	e := &entry{fact: x.record(f), stream: s, expires: stageOr(f.Stage, now).Add(x.ttl())}
	live := !e.expired(now)
	var woken []slotKey

	switch {
	case f.Collection != nil:
		for _, uid := range f.Collection.UIDs {
			if x.takeRemoval(s, uid, e) {
				woken = append(woken, uidKey(uid))
			}
		}
		// A collection that named what it deleted is authoritative: an
		// object outside its set was not deleted by it, so only one
		// without a set is matched by scope.
		if len(f.Collection.UIDs) == 0 && live {
			s.collections[f.Namespace] = append(s.collections[f.Namespace], e)
			e.held++
			e.slots = append(e.slots, namespaceKey(f.Namespace))
			woken = append(woken, namespaceKey(f.Namespace))
		}
	default:
		if f.Verb == "delete" && f.UID != "" && x.takeRemoval(s, f.UID, e) {
			woken = append(woken, uidKey(f.UID))
		}
		if live {
			for _, k := range strongestKeys(f) {
				if x.takeSlot(s, k, e) {
					woken = append(woken, k)
				}
			}
		}
	}
	if e.held == 0 {
		return nil, false
	}
	if f.AuditID != "" {
		s.byAuditID[f.AuditID] = e
	}
	x.order.PushBack(e)
	s.order.PushBack(e)
	if len(e.slots) > 0 {
		x.ttlOrder.PushBack(e)
	}
	return woken, true
}

// strongestKeys are the keys a write or delete fact is filed under: the
// strongest it has, first match wins; (uid, rv) brings (uid) along.
func strongestKeys(f facts.Fact) []slotKey {
	switch {
	case f.UID != "" && f.ResourceVersion != "":
		return []slotKey{uidRVKey(f.UID, f.ResourceVersion), uidKey(f.UID)}
	case f.UID != "":
		return []slotKey{uidKey(f.UID)}
	case f.ResourceVersion != "":
		return []slotKey{rvKey(f.ResourceVersion)}
	case f.Name != "":
		return []slotKey{nameKey(f.Namespace, f.Name)}
	}
	return nil
}

func stageOr(stage, now time.Time) time.Time {
	if stage.IsZero() {
		return now
	}
	return stage
}

// takeSlot files e under k of s unless the fact there wins: under a key
// that names a version ((uid, rv), rv) the earliest, elsewhere the latest
// by stage time.
func (x *Index) takeSlot(s *streamIndex, k slotKey, e *entry) bool {
	if old := s.slots[k]; old != nil {
		if !replaces(k, e.fact.Stage, old.fact.Stage) {
			return false
		}
		x.release(old)
	}
	s.slots[k] = e
	e.held++
	e.slots = append(e.slots, k)
	return true
}

// replaces is the decision whether a fact staged at stage takes key k from
// one staged at held. A version is produced once, by the first write that
// returned it: a no-op apply or patch (which the accept gate cannot tell
// from a write, its event differs only in id and time) and a finalizer
// removal return the version an earlier write produced, and must not take
// its author. The other keys are last writer wins.
func replaces(k slotKey, stage, held time.Time) bool {
	if k.kind == slotUIDRV || k.kind == slotRV {
		return stage.Before(held)
	}
	return !stage.Before(held)
}

// takeRemoval puts e in uid's sticky slot of s unless an earlier removal
// holds it.
func (x *Index) takeRemoval(s *streamIndex, uid string, e *entry) bool {
	if old := s.removals[uid]; old != nil {
		if !e.fact.Stage.Before(old.fact.Stage) {
			return false
		}
		x.release(old)
	}
	s.removals[uid] = e
	e.held++
	e.removalUIDs = append(e.removalUIDs, uid)
	return true
}

// release is called when a later fact took one of old's places; a fact
// replaced everywhere is forgotten (superseded, not evicted).
func (x *Index) release(old *entry) {
	old.held--
	if old.held == 0 {
		x.forget(old)
	}
}

// drop forgets e everywhere.
func (x *Index) drop(e *entry) {
	x.unfileTTL(e)
	s := e.stream
	for _, uid := range e.removalUIDs {
		if s.removals[uid] == e {
			delete(s.removals, uid)
		}
	}
	x.forget(e)
}

// unfileTTL takes e out of the TTL'd keys (not the sticky slot).
func (x *Index) unfileTTL(e *entry) {
	s := e.stream
	for _, k := range e.slots {
		if k.kind == slotNamespace {
			s.collections[k.a] = removeEntry(s.collections[k.a], e)
			if len(s.collections[k.a]) == 0 {
				delete(s.collections, k.a)
			}
			continue
		}
		if s.slots[k] == e {
			delete(s.slots, k)
		}
	}
	e.slots = nil
	x.ttlOrder.Remove(e)
}

// forget removes e from the bookkeeping once nothing points at it.
func (x *Index) forget(e *entry) {
	s := e.stream
	if e.fact.AuditID != "" && s.byAuditID[e.fact.AuditID] == e {
		delete(s.byAuditID, e.fact.AuditID)
	}
	x.ttlOrder.Remove(e)
	x.order.Remove(e)
	s.order.Remove(e)
}

func removeEntry(es []*entry, e *entry) []*entry {
	for i, c := range es {
		if c == e {
			return append(es[:i], es[i+1:]...)
		}
	}
	return es
}

// enforceCaps evicts the oldest facts of s past the per-type cap, then the
// oldest overall past the total cap.
func (x *Index) enforceCaps(s *streamIndex) {
	for s.order.Len() > capOr(x.MaxPerStream, DefaultMaxPerStream) {
		x.drop(s.order.Front())
		x.observer().Evicted(EvictedTypeCap)
	}
	for x.order.Len() > capOr(x.MaxTotal, DefaultMaxTotal) {
		x.drop(x.order.Front())
		x.observer().Evicted(EvictedTotalCap)
	}
}

// trimExpired drops expired facts from the oldest applied end until the
// first live one; Sweep finds the rest.
func (x *Index) trimExpired(now time.Time) {
	for e := x.ttlOrder.Front(); e != nil; e = x.ttlOrder.Front() {
		if !e.expired(now) {
			return
		}
		x.expire(e)
	}
}

// expire takes an expired e out of the TTL'd keys; it stays only where it
// holds a sticky removal slot.
func (x *Index) expire(e *entry) {
	x.unfileTTL(e)
	e.held = 0
	s := e.stream
	for _, uid := range e.removalUIDs {
		if s.removals[uid] == e {
			e.held++
		}
	}
	if e.held == 0 {
		x.forget(e)
		x.observer().Evicted(EvictedExpired)
	}
}

// Sweep drops every expired fact.
func (x *Index) Sweep() {
	x.mu.Lock()
	now := x.clock().Now()
	for e := x.ttlOrder.Front(); e != nil; {
		next := x.ttlOrder.Next(e)
		if e.expired(now) {
			x.expire(e)
		}
		e = next
	}
	entries := x.order.Len()
	x.mu.Unlock()
	x.observer().IndexEntries(entries)
}

// StartSweeping sweeps every interval (the TTL's tenth when interval is
// zero) on a goroutine of its own until ctx ends; the returned channel
// closes when it has stopped. The ticker exists when it returns.
func (x *Index) StartSweeping(ctx context.Context, interval time.Duration) <-chan struct{} {
	if interval <= 0 {
		interval = x.ttl() / 10
	}
	t := x.clock().NewTicker(interval)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				x.Sweep()
			}
		}
	}()
	return done
}

// Len is how many facts the index holds.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.order.Len()
}
