// Package attribution joins watch events to the attribution facts the audit
// ingress and the admission observer published (architecture.md, "Optional
// attribution"): the Index keeps the facts of the streams this process
// follows, bounded and TTL'd (an admission fact is a candidate a watch
// event must confirm, candidates.go), the Resolver finds the author of one
// watch event in it, waiting a short grace for a fact still in flight, and
// the Follower feeds the Index from a facts.Transport. The watch stream
// calls the Resolver; nothing here calls the watch.
package attribution

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Defaults for the zero fields of an Index. DefaultTTL is also the
// operator's --author-attribution-fact-ttl default (and the chart's
// attribution.factTTL), the one fact TTL the transports retain facts for.
const (
	DefaultTTL          = 10 * time.Minute
	DefaultMaxPerStream = 50_000
	DefaultMaxTotal     = 200_000
)

// Index files each applied fact under the strongest key it has, first
// match wins, within its stream (audit route, group/resource):
//
//   - (uid, rv) and (uid) together when it has both, else (uid), else
//     (rv), else (namespace, name); by stage time, the earliest writer
//     keeps a key that names a version ((uid, rv), (rv)) and the latest
//     the others;
//   - a removal (a delete with a uid, or a uid in a deletecollection's
//     set) also takes the uid's sticky removal slot, which write facts
//     never reach and the TTL does not bound (only the caps do): the
//     earliest removal by stage time keeps it;
//   - a deletecollection whose response named no uids is filed by
//     namespace, for the scope tier;
//   - an admission fact is a candidate, filed apart from the audit facts
//     and every one kept (candidates.go): it names nobody until a watch
//     event confirms it.
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
		s = newStreamIndex(key, x.ttl())
		x.streams[key] = s
	}
	return s
}

// file files one fact and returns the waiter keys it may answer; false
// when the fact was a duplicate or had no key to be read by.
func (x *Index) file(s *streamIndex, f facts.Fact, now time.Time) ([]slotKey, bool) {
	e := &entry{record: x.record(f, now), stream: s, uid: f.UID}
	if f.AuditID != "" && s.holds(f, e.id) {
		return nil, false
	}
	if f.IsRemoval() {
		e.flags |= isRemoval
	}
	live := !s.expired(e, now)
	var woken []slotKey

	switch {
	case f.IsCandidate():
		if live {
			woken = append(woken, s.fileCandidate(f, e)...)
		}
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
			s.fileScope(f.Namespace, e)
			woken = append(woken, namespaceKey(f.Namespace))
		}
	default:
		if f.Verb == "delete" && f.UID != "" && x.takeRemoval(s, f.UID, e) {
			woken = append(woken, uidKey(f.UID))
		}
		if live {
			woken = append(woken, x.fileStrongest(s, f, e)...)
		}
	}
	if e.held == 0 {
		return nil, false
	}
	x.order.PushBack(e)
	s.order.PushBack(e)
	if e.flags&ttlSlots != 0 {
		x.ttlOrder.PushBack(e)
	}
	return woken, true
}

// fileStrongest files a write or delete fact under the strongest keys it
// has, first match wins: (uid, rv) with (uid), else (uid), else (rv), else
// (namespace, name). It returns the keys it took.
func (x *Index) fileStrongest(s *streamIndex, f facts.Fact, e *entry) []slotKey {
	var took []slotKey
	switch {
	case f.UID != "":
		e.ref = f.ResourceVersion
		if f.ResourceVersion != "" && x.takeVersion(s, e) {
			took = append(took, uidRVKey(f.UID, f.ResourceVersion))
		}
		if x.takeLatest(s, e) {
			took = append(took, uidKey(f.UID))
		}
	case f.ResourceVersion != "":
		e.ref = f.ResourceVersion
		if x.takeKeyed(s.byVersion, e, inRV, versionWins) {
			took = append(took, rvKey(f.ResourceVersion))
		}
	case f.Name != "":
		e.ref = nameRef(f.Namespace, f.Name)
		if x.takeKeyed(s.byName, e, inName, latestWins) {
			took = append(took, nameKey(f.Namespace, f.Name))
		}
	}
	return took
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
	e.stream.unfileRemovals(e)
	x.forget(e)
}

// unfileTTL takes e out of the TTL'd keys (not the sticky slot).
func (x *Index) unfileTTL(e *entry) {
	e.stream.unfileTTL(e)
	x.ttlOrder.Remove(e)
}

// forget removes e from the bookkeeping once nothing points at it.
func (x *Index) forget(e *entry) {
	x.ttlOrder.Remove(e)
	x.order.Remove(e)
	e.stream.order.Remove(e)
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
		if !e.stream.expired(e, now) {
			return
		}
		x.expire(e)
	}
}

// expire takes an expired e out of the TTL'd keys; it stays only where it
// holds a sticky removal slot.
func (x *Index) expire(e *entry) {
	x.unfileTTL(e)
	e.held = e.stream.removalsHeld(e)
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
		if e.stream.expired(e, now) {
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
