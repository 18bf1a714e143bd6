package attribution

import (
	"time"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Admission facts are candidates: a review happens before its write is
// persisted, and the write may still fail (a later webhook or policy
// refuses it, a conflict, a quota). The index files them apart from audit
// facts, every one of them (no key is first or last writer wins: two
// reviews may share a key), and a candidate names an actor only when a
// watch event confirms it:
//
//   - an update (a patch, a PUT, an apply of an existing object, a /scale)
//     by the object's uid and the version it was made against, which is
//     the version of the stream's previous event for the object, and by
//     the digest of what it carried when it has one (a /scale has none);
//   - a delete by uid (a deletecollection is one review per object);
//   - a create by namespace and name (generateName's final name is in the
//     review), on an ADDED event with the digest it carried, and the uid
//     when it has one (a re-creation is another object).
//
// Two confirmed candidates that name different actors are no answer
// (TierAmbiguous): the reviewed content is all that tells writers apart,
// and a wrong author is worse than none. A patch the API server retried
// after a conflict was reviewed once per attempt, each against a newer
// version: only the attempt the event confirms counts. An unconfirmed
// candidate expires with the TTL.

// candidate is what confirming a filed admission fact reads of it.
type candidate struct {
	removal, create bool
	uid             string
	// previousVersion is an update's: the version it was made against.
	previousVersion string
	digest          string
	// stage is when the review was received (Unix nanoseconds).
	stage int64
}

// reviewSkew bounds how far a review's receipt and the API server's own
// time of the change it reviewed (whole seconds, another clock) may lie
// apart; unwrittenReviewAge how long before its watch event a review of a
// change with no such time may have been received.
const (
	reviewSkew         = 5 * time.Second
	unwrittenReviewAge = time.Minute
)

// reviewedAbout reports whether a review received at stage was made about
// when the change q shows was: a review that carries no digest of content
// (a delete, a /scale, a sensitive type) is otherwise told apart from an
// earlier review of a write that was refused only by uid and version,
// which a later write made while the observer was down can share.
func reviewedAbout(q Query, stage time.Time) bool {
	if !q.WrittenAt.IsZero() {
		d := stage.Sub(q.WrittenAt)
		return d > -reviewSkew && d < reviewSkew+time.Second // WrittenAt is truncated to the second
	}
	return q.Received.IsZero() || q.Received.Sub(stage) < unwrittenReviewAge
}

// confirms reports whether the watch event q confirms candidate c: the
// write c reviewed is the one q shows.
func confirms(q Query, c candidate) bool {
	if c.digest == "" && !reviewedAbout(q, time.Unix(0, c.stage)) {
		return false
	}
	switch {
	case q.Removal || c.removal:
		return q.Removal && c.removal && q.UID != "" && c.uid == q.UID
	case c.create:
		// A create's review carries the uid the API server generated for
		// it, so a refused create's review never matches a later object;
		// one without a digest (a sensitive type) counts by that uid alone.
		if !q.Created || q.PreviousVersion != "" || (c.uid != "" && c.uid != q.UID) {
			return false
		}
		if c.digest == "" {
			return c.uid != ""
		}
		return c.digest == q.Digest
	default:
		return q.PreviousVersion != "" && c.previousVersion == q.PreviousVersion && q.UID != "" && c.uid == q.UID &&
			(c.digest == "" || c.digest == q.Digest)
	}
}

// agreed is the one actor every confirmed candidate names: the latest
// review of it, by stage time. ambiguous when they name more than one
// actor; neither when there are none.
func agreed(confirmed []record) (latest record, found, ambiguous bool) {
	for i, r := range confirmed {
		if i > 0 && !sameActor(r.Actor, latest.Actor) {
			return record{}, false, true
		}
		if i == 0 || r.stage > latest.stage {
			latest = r
		}
	}
	return latest, len(confirmed) > 0, false
}

func sameActor(a, b *facts.Actor) bool {
	return a.Username == b.Username && a.DisplayName == b.DisplayName && a.Email == b.Email
}

// candidateOf is e as confirms reads it.
func (e *entry) candidateOf() candidate {
	c := candidate{removal: e.IsRemoval(), create: e.flags&candidateCreate != 0, uid: e.uid, digest: e.stream.digests[e],
		stage: e.record.stage}
	if !c.create {
		c.previousVersion = e.ref
	}
	return c
}

// fileCandidate files an admission fact by the key its operation is
// confirmed by, and returns the waiter key it answers; none when it
// cannot be confirmed (an update without the version it was made
// against, a create with neither the digest of what it carried nor the
// uid the API server gave it: a sensitive type's create has only the uid).
func (s *streamIndex) fileCandidate(f facts.Fact, e *entry) []slotKey {
	e.flags |= isCandidate
	var key slotKey
	switch {
	case f.Verb == "create" && f.Name != "" && (f.Digest != "" || f.UID != ""):
		e.ref = nameRef(f.Namespace, f.Name)
		e.flags |= candidateCreate
		s.candidatesByName[e.ref] = append(s.candidatesByName[e.ref], e)
		key = candidateNameKey(f.Namespace, f.Name)
	case f.UID != "" && f.Verb == "delete":
		s.candidatesByUID[f.UID] = append(s.candidatesByUID[f.UID], e)
		key = candidateUIDKey(f.UID)
	case f.UID != "" && (f.Verb == "update" || f.Verb == "patch") && f.PreviousVersion != "":
		e.ref = f.PreviousVersion
		s.candidatesByUID[f.UID] = append(s.candidatesByUID[f.UID], e)
		key = candidateUIDKey(f.UID)
	default:
		return nil
	}
	if f.Digest != "" {
		s.digests[e] = f.Digest
	}
	e.held++
	e.flags |= inCandidate
	return []slotKey{key}
}

// unfileCandidate takes e out of the candidate lists.
func (s *streamIndex) unfileCandidate(e *entry) {
	delete(s.digests, e)
	if e.flags&candidateCreate != 0 {
		s.candidatesByName[e.ref] = removeEntry(s.candidatesByName[e.ref], e)
		if len(s.candidatesByName[e.ref]) == 0 {
			delete(s.candidatesByName, e.ref)
		}
		return
	}
	s.candidatesByUID[e.uid] = removeEntry(s.candidatesByUID[e.uid], e)
	if len(s.candidatesByUID[e.uid]) == 0 {
		delete(s.candidatesByUID, e.uid)
	}
}

// holdsCandidate reports whether the candidate with audit id id is filed.
func (s *streamIndex) holdsCandidate(f facts.Fact, id auditID) bool {
	list := s.candidatesByUID[f.UID]
	if f.Verb == "create" {
		list = s.candidatesByName[nameRef(f.Namespace, f.Name)]
	}
	for _, e := range list {
		if e.id == id {
			return true
		}
	}
	return false
}

// confirmed is what the live candidates q confirms say: the admission
// match, TierAmbiguous when they disagree on the actor, nil when none
// confirms q.
func (s *streamIndex) confirmed(q Query, now time.Time) *match {
	var found []record
	collect := func(list []*entry) {
		for _, e := range list {
			if s.live(e, now) != nil && confirms(q, e.candidateOf()) {
				found = append(found, e.record)
			}
		}
	}
	if q.UID != "" {
		collect(s.candidatesByUID[q.UID])
	}
	if q.Created && q.Name != "" {
		collect(s.candidatesByName[nameRef(q.Namespace, q.Name)])
	}
	r, ok, ambiguous := agreed(found)
	switch {
	case ambiguous:
		return &match{tier: TierAmbiguous}
	case ok:
		return &match{tier: TierAdmission, fact: r}
	}
	return nil
}
