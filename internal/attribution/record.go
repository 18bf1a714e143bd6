package attribution

import (
	"time"

	"github.com/google/uuid"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// maxInterned bounds the actors the index shares: past it, it starts
// again empty (later facts then share the new copies). A cluster has a few
// hundred people and service accounts, so in practice it never refills.
const maxInterned = 10_000

// record is what a lookup reads of a filed fact. The keys (uid,
// resourceVersion, name) live in the entry and the slots it is filed
// under, the stream in its stream index; the version, the verb and the
// actor's groups name no author.
type record struct {
	id auditID
	// Actor is shared by every fact of the same actor.
	Actor      *facts.Actor
	Collection *facts.Collection
	// stage is the stage time in Unix nanoseconds: the time of filing when
	// the fact carried none.
	stage int64
}

// Stage is the fact's stage time.
func (r record) Stage() time.Time { return time.Unix(0, r.stage) }

// AuditID is the fact's audit id.
func (r record) AuditID() string { return r.id.String() }

// auditID holds an audit id in 16 bytes when it is a uuid in canonical
// form, as the API server generates them, and as text otherwise: a client
// may send an Audit-ID header of its own.
type auditID struct {
	uuid [16]byte
	text string
}

func newAuditID(s string) auditID {
	if u, err := uuid.Parse(s); err == nil && u != uuid.Nil && u.String() == s {
		return auditID{uuid: u}
	}
	return auditID{text: s}
}

func (a auditID) String() string {
	if a.uuid == ([16]byte{}) {
		return a.text
	}
	return uuid.UUID(a.uuid).String()
}

// actorKey is an actor without the groups the index does not keep.
type actorKey struct{ username, displayName, email string }

// record reduces f to what the index keeps. Callers hold the index lock.
func (x *Index) record(f facts.Fact, now time.Time) record {
	return record{id: newAuditID(f.AuditID), Actor: x.actor(f.Actor), Collection: f.Collection, stage: stageOr(f.Stage, now).UnixNano()}
}

func stageOr(stage, now time.Time) time.Time {
	if stage.IsZero() {
		return now
	}
	return stage
}

// actor is the one shared copy of a.
func (x *Index) actor(a facts.Actor) *facts.Actor {
	key := actorKey{a.Username, a.DisplayName, a.Email}
	if shared, ok := x.actors[key]; ok {
		return shared
	}
	if x.actors == nil || len(x.actors) >= maxInterned {
		x.actors = make(map[actorKey]*facts.Actor)
	}
	shared := &facts.Actor{Username: a.Username, DisplayName: a.DisplayName, Email: a.Email}
	x.actors[key] = shared
	return shared
}
