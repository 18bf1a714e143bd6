package attribution

import (
	"time"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// slotKind names one of the key spaces a fact is looked up and waited on
// by.
type slotKind uint8

const (
	slotUIDRV slotKind = iota
	slotUID
	slotRV
	slotName
	// slotNamespace is the scope tier's: collections without a uid set.
	slotNamespace
	// slotCandidateUID and slotCandidateName are the admission
	// candidates': reviews of updates and deletes by uid, of creates by
	// name.
	slotCandidateUID
	slotCandidateName
)

// slotKey is a waiter's key (wait.go); the index itself files facts in
// the per-kind structures of streamIndex.
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
func candidateUIDKey(uid string) slotKey    { return slotKey{kind: slotCandidateUID, a: uid} }
func candidateNameKey(namespace, name string) slotKey {
	return slotKey{kind: slotCandidateName, a: namespace, b: name}
}

// nameRef is the byName key of (namespace, name): a namespace holds no
// slash, so the first one ends it.
func nameRef(namespace, name string) string { return namespace + "/" + name }

// streamIndex is the facts of one stream, by the keys the tiers read.
//
// Its layout is what keeps an index of 100,000 facts near 30 MiB: the
// per-object slots live in one map value keyed by uid, and an entry keeps
// the one string ref its key needs instead of a slice of keys.
type streamIndex struct {
	key facts.StreamKey
	ttl time.Duration
	// objects are the slots of facts with a uid.
	objects map[string]object
	// byVersion and byName hold facts without a uid: by resourceVersion,
	// else by nameRef.
	byVersion, byName map[string]*entry
	// collections are the deletecollections without a uid set, by namespace.
	collections map[string][]*entry
	// candidatesByUID and candidatesByName are the admission facts
	// (candidates.go): update and delete reviews by uid, create reviews by
	// nameRef, every review, oldest applied first.
	candidatesByUID, candidatesByName map[string][]*entry
	// digests are the candidates' digests of what the reviewed object
	// would write: kept beside the entries, which audit facts share.
	digests map[*entry]string
	// order holds the stream's entries, oldest applied first (the type cap).
	order entryList
}

func newStreamIndex(key facts.StreamKey, ttl time.Duration) *streamIndex {
	return &streamIndex{key: key, ttl: ttl, objects: map[string]object{},
		byVersion: map[string]*entry{}, byName: map[string]*entry{},
		collections: map[string][]*entry{}, candidatesByUID: map[string][]*entry{}, candidatesByName: map[string][]*entry{},
		digests: map[*entry]string{},
		order:   entryList{at: streamLink}}
}

// object is the slots of one uid.
type object struct {
	// latest is the (uid) slot: the last writer by stage time.
	latest *entry
	// versions are the (uid, rv) slots, newest filed first, threaded
	// through entry.nextVersion: the earliest writer of each version.
	versions *entry
	// removal is the sticky slot: the earliest removal naming the uid.
	removal *entry
}

func (o object) empty() bool { return o.latest == nil && o.versions == nil && o.removal == nil }

// entry is one applied fact and the places it is filed.
type entry struct {
	record
	stream *streamIndex
	uid    string
	// ref is the string the fact's other key needs: its resourceVersion
	// (with or without a uid), its nameRef, or a scope collection's
	// namespace; a candidate's previous version, or a create's nameRef.
	ref         string
	nextVersion *entry
	// held counts the places that still point at it; at zero it is gone.
	held                 int32
	flags                entryFlags
	all, inStream, inTTL link
}

// entryFlags say what a fact is and where it is filed.
type entryFlags uint16

const (
	isRemoval entryFlags = 1 << iota
	inLatest
	inVersion
	inRV
	inName
	inScope
	// ownRemoval: a delete fact in its own uid's sticky slot. A
	// collection's are found through its uid set.
	ownRemoval
	// isCandidate: an admission fact; candidateCreate: a create's, filed
	// by name; inCandidate: in its candidate list.
	isCandidate
	candidateCreate
	inCandidate

	ttlSlots = inLatest | inVersion | inRV | inName | inScope | inCandidate
)

func (e *entry) IsRemoval() bool { return e.flags&isRemoval != 0 }

func (s *streamIndex) expired(e *entry, now time.Time) bool {
	return !now.Before(e.Stage().Add(s.ttl))
}

// live is e unless it is nil or expired: expiry is checked on read.
func (s *streamIndex) live(e *entry, now time.Time) *entry {
	if e != nil && !s.expired(e, now) {
		return e
	}
	return nil
}

// holds reports whether a fact with f's keys and audit id id is filed
// where f would be: the dedupe of a re-read stream. A copy that lost all
// its places to other facts would lose them again.
func (s *streamIndex) holds(f facts.Fact, id auditID) bool {
	is := func(e *entry) bool { return e != nil && e.id == id }
	switch {
	case f.IsCandidate():
		return s.holdsCandidate(f, id)
	case f.Collection != nil:
		for _, uid := range f.Collection.UIDs {
			if is(s.objects[uid].removal) {
				return true
			}
		}
		for _, e := range s.collections[f.Namespace] {
			if is(e) {
				return true
			}
		}
		return false
	case f.UID != "":
		o := s.objects[f.UID]
		if is(o.latest) || is(o.removal) {
			return true
		}
		for v := o.versions; v != nil; v = v.nextVersion {
			if is(v) {
				return true
			}
		}
		return false
	case f.ResourceVersion != "":
		return is(s.byVersion[f.ResourceVersion])
	case f.Name != "":
		return is(s.byName[nameRef(f.Namespace, f.Name)])
	}
	return false
}

func (s *streamIndex) put(uid string, o object) {
	if o.empty() {
		delete(s.objects, uid)
		return
	}
	s.objects[uid] = o
}

// versionWins and latestWins decide whether a fact staged at stage takes
// a key from one staged at held. A version is produced once, by the first
// write that returned it: a no-op apply or patch (which the accept gate
// cannot tell from a write, its event differs only in id and time) and a
// finalizer removal return the version an earlier write produced, and
// must not take its author. The other keys are last writer wins.
func versionWins(stage, held int64) bool { return stage < held }
func latestWins(stage, held int64) bool  { return stage >= held }

// takeLatest files e in its uid's (uid) slot unless a later fact holds it.
func (x *Index) takeLatest(s *streamIndex, e *entry) bool {
	o := s.objects[e.uid]
	if old := o.latest; old != nil {
		if !latestWins(e.stage, old.stage) {
			return false
		}
		old.flags &^= inLatest
		x.release(old)
	}
	o.latest = e
	s.put(e.uid, o)
	e.held++
	e.flags |= inLatest
	return true
}

// takeVersion files e in its (uid, rv) slot unless an earlier fact holds it.
func (x *Index) takeVersion(s *streamIndex, e *entry) bool {
	o := s.objects[e.uid]
	for v := o.versions; v != nil; v = v.nextVersion {
		if v.ref != e.ref {
			continue
		}
		if !versionWins(e.stage, v.stage) {
			return false
		}
		o.versions = unlinkVersion(o.versions, v)
		x.release(v)
		break
	}
	e.nextVersion = o.versions
	o.versions = e
	s.put(e.uid, o)
	e.held++
	e.flags |= inVersion
	return true
}

// unlinkVersion takes e out of the version list starting at head and
// returns its new head.
func unlinkVersion(head, e *entry) *entry {
	e.flags &^= inVersion
	if head == e {
		next := e.nextVersion
		e.nextVersion = nil
		return next
	}
	for v := head; v != nil; v = v.nextVersion {
		if v.nextVersion == e {
			v.nextVersion = e.nextVersion
			e.nextVersion = nil
			break
		}
	}
	return head
}

// takeKeyed files e under its ref in m (byVersion or byName) unless wins
// says the fact there keeps it.
func (x *Index) takeKeyed(m map[string]*entry, e *entry, flag entryFlags, wins func(stage, held int64) bool) bool {
	if old := m[e.ref]; old != nil {
		if !wins(e.stage, old.stage) {
			return false
		}
		old.flags &^= flag
		x.release(old)
	}
	m[e.ref] = e
	e.held++
	e.flags |= flag
	return true
}

// fileScope files a collection without a uid set by its namespace.
func (s *streamIndex) fileScope(namespace string, e *entry) {
	e.ref = namespace
	s.collections[namespace] = append(s.collections[namespace], e)
	e.held++
	e.flags |= inScope
}

// takeRemoval puts e in uid's sticky slot unless an earlier removal
// holds it.
func (x *Index) takeRemoval(s *streamIndex, uid string, e *entry) bool {
	o := s.objects[uid]
	if old := o.removal; old != nil {
		if e.stage >= old.stage {
			return false
		}
		old.flags &^= ownRemoval
		x.release(old)
	}
	o.removal = e
	s.put(uid, o)
	e.held++
	if e.Collection == nil {
		e.flags |= ownRemoval
	}
	return true
}

// removalUIDs are the uids whose sticky slot e may hold.
func (e *entry) removalUIDs() []string {
	if e.Collection != nil {
		return e.Collection.UIDs
	}
	if e.flags&ownRemoval != 0 {
		return []string{e.uid}
	}
	return nil
}

// removalsHeld counts the sticky slots e holds.
func (s *streamIndex) removalsHeld(e *entry) int32 {
	var n int32
	for _, uid := range e.removalUIDs() {
		if s.objects[uid].removal == e {
			n++
		}
	}
	return n
}

// unfileRemovals takes e out of every sticky slot it holds.
func (s *streamIndex) unfileRemovals(e *entry) {
	for _, uid := range e.removalUIDs() {
		if o := s.objects[uid]; o.removal == e {
			o.removal = nil
			s.put(uid, o)
		}
	}
	e.flags &^= ownRemoval
}

// unfileTTL takes e out of the TTL'd keys (not the sticky slot).
func (s *streamIndex) unfileTTL(e *entry) {
	if e.flags&(inLatest|inVersion) != 0 {
		o := s.objects[e.uid]
		if o.latest == e {
			o.latest = nil
		}
		if e.flags&inVersion != 0 {
			o.versions = unlinkVersion(o.versions, e)
		}
		s.put(e.uid, o)
	}
	if e.flags&inRV != 0 && s.byVersion[e.ref] == e {
		delete(s.byVersion, e.ref)
	}
	if e.flags&inName != 0 && s.byName[e.ref] == e {
		delete(s.byName, e.ref)
	}
	if e.flags&inCandidate != 0 {
		s.unfileCandidate(e)
	}
	if e.flags&inScope != 0 {
		s.collections[e.ref] = removeEntry(s.collections[e.ref], e)
		if len(s.collections[e.ref]) == 0 {
			delete(s.collections, e.ref)
		}
	}
	e.flags &^= ttlSlots
}

func removeEntry(es []*entry, e *entry) []*entry {
	for i, c := range es {
		if c == e {
			return append(es[:i], es[i+1:]...)
		}
	}
	return es
}
