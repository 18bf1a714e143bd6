package attribution

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// match is one tier's answer: the fact that named the actor.
type match struct {
	tier Tier
	fact record
}

// evidence is what the index holds for one watch event: the audit tiers'
// answer and the admission candidates', either nil.
type evidence struct {
	audit, admission *match
}

// lookup walks the tier ladder once and asks the candidates: the evidence
// the index holds for q now.
//
// A removal asks the sticky removal slot first (rule a) and takes only
// deletion evidence (rule b): a write fact names who last edited the
// object, never who removed it, so however long the deletion's own fact
// is late, a removal never takes a write fact. The one write that names
// a deleter is the one a delete request made itself (the deletionTimestamp
// of an object with finalizers), and that fact is a delete fact in the
// sticky slot. A create or update takes no removal tier and no fact about
// a removal it did not make, and one that carries uid and rv never takes
// the uid pointer (rule c): that pointer may name an older, different
// author.
func (x *Index) lookup(q Query, grace time.Duration) evidence {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.streams[q.Stream]
	if s == nil {
		return evidence{}
	}
	now := x.clock().Now()
	ev := evidence{admission: s.confirmed(q, now)}
	if q.Removal {
		ev.audit = s.lookupRemoval(q, now, grace)
	} else {
		ev.audit = s.lookupWrite(q, now)
	}
	return ev
}

// version, latest, byRV and named are the live facts under the TTL'd
// keys, if any.
func (s *streamIndex) version(uid, rv string, now time.Time) *entry {
	for v := s.objects[uid].versions; v != nil; v = v.nextVersion {
		if v.ref == rv {
			return s.live(v, now)
		}
	}
	return nil
}

func (s *streamIndex) latest(uid string, now time.Time) *entry {
	return s.live(s.objects[uid].latest, now)
}

func (s *streamIndex) byRV(rv string, now time.Time) *entry {
	return s.live(s.byVersion[rv], now)
}

func (s *streamIndex) named(namespace, name string, now time.Time) *entry {
	if len(s.byName) == 0 {
		return nil
	}
	return s.live(s.byName[nameRef(namespace, name)], now)
}

func (s *streamIndex) lookupRemoval(q Query, now time.Time, grace time.Duration) *match {
	if q.UID != "" {
		if e := s.objects[q.UID].removal; e != nil {
			if e.Collection != nil {
				return &match{tier: TierDeleteCollectionUID, fact: e.record}
			}
			return &match{tier: TierDeleteSticky, fact: e.record}
		}
	}
	// Past the sticky slot, in ladder order: a delete fact without a uid
	// by name, a collection covering the object, a delete fact without a
	// uid by rv. A delete fact with a uid is always in the sticky slot, so
	// the uid's latest write (TierLatest) has nothing a removal may take.
	if q.Name != "" {
		if e := s.named(q.Namespace, q.Name, now); e != nil && e.IsRemoval() {
			return &match{tier: TierName, fact: e.record}
		}
	}
	if f, ok := s.coveringCollection(q, now, grace); ok {
		return &match{tier: TierDeleteCollectionScope, fact: f}
	}
	if q.ResourceVersion != "" {
		if e := s.byRV(q.ResourceVersion, now); e != nil && e.IsRemoval() {
			return &match{tier: TierResourceVersion, fact: e.record}
		}
	}
	return nil
}

func (s *streamIndex) lookupWrite(q Query, now time.Time) *match {
	exactCapable := q.exactCapable()
	if exactCapable {
		// Any fact that produced this version, a delete that set the
		// deletionTimestamp included: its actor made what the event shows.
		if e := s.version(q.UID, q.ResourceVersion, now); e != nil {
			return &match{tier: TierExact, fact: e.record}
		}
	}
	if q.Name != "" {
		// Only facts without a uid are filed by name. A removal there is
		// an earlier incarnation's end, not this write.
		if e := s.named(q.Namespace, q.Name, now); e != nil && !e.IsRemoval() {
			return &match{tier: TierName, fact: e.record}
		}
	}
	if q.UID != "" && !exactCapable {
		if e := s.latest(q.UID, now); e != nil && !e.IsRemoval() {
			return &match{tier: TierLatest, fact: e.record}
		}
	}
	if q.ResourceVersion != "" {
		// Facts without a uid, for exactly this version.
		if e := s.byRV(q.ResourceVersion, now); e != nil {
			return &match{tier: TierResourceVersion, fact: e.record}
		}
	}
	return nil
}

// coveringCollection is the deletecollection without a uid set whose
// namespace and selectors cover the removed object and whose stage time
// is within grace of the event. Collections by different actors that all
// cover it are no answer: the scope cannot tell which one deleted it.
func (s *streamIndex) coveringCollection(q Query, now time.Time, grace time.Duration) (record, bool) {
	at := q.Received
	if at.IsZero() {
		at = now
	}
	var found *entry
	namespaces := []string{q.Namespace}
	if q.Namespace != "" {
		namespaces = append(namespaces, "") // a collection across all namespaces
	}
	for _, ns := range namespaces {
		for _, e := range s.collections[ns] {
			if s.expired(e, now) || !withinGrace(e.Stage(), at, grace) || !covers(e.Collection, q) {
				continue
			}
			if found != nil && found.Actor.Username != e.Actor.Username {
				return record{}, false
			}
			if found == nil || found.stage < e.stage {
				found = e
			}
		}
	}
	if found == nil {
		return record{}, false
	}
	return found.record, true
}

func withinGrace(stage, at time.Time, grace time.Duration) bool {
	d := stage.Sub(at)
	return d >= -grace && d <= grace
}

// covers reports whether c's selectors select the object q names. A field
// selector on anything but the name and namespace cannot be evaluated
// from a watch event's key, so it covers nothing.
func covers(c *facts.Collection, q Query) bool {
	sel, err := labels.Parse(c.LabelSelector)
	if err != nil || !sel.Matches(labels.Set(q.Labels)) {
		return false
	}
	if strings.TrimSpace(c.FieldSelector) == "" {
		return true
	}
	fsel, err := fields.ParseSelector(c.FieldSelector)
	if err != nil {
		return false
	}
	for _, r := range fsel.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return false
		}
	}
	return fsel.Matches(fields.Set{"metadata.name": q.Name, "metadata.namespace": q.Namespace})
}
