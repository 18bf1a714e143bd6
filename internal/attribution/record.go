package attribution

import (
	"time"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// maxInterned bounds the actors the index shares: past it, it starts
// again empty (later facts then share the new copies). A cluster has a few
// hundred people and service accounts, so in practice it never refills.
const maxInterned = 10_000

// record is what the index keeps of a fact: what a lookup reads once the
// fact is filed. The keys (uid, resourceVersion, name) live in the slots
// it is filed under, the stream in its stream index; the version, the
// verb and the actor's groups name no author. Field names follow
// facts.Fact.
type record struct {
	AuditID string
	// Actor is shared by every fact of the same actor.
	Actor      *facts.Actor
	Collection *facts.Collection
	Stage      time.Time
	removal    bool
}

// IsRemoval reports whether the fact was about a deletion.
func (r record) IsRemoval() bool { return r.removal }

// actorKey is an actor without the groups the index does not keep.
type actorKey struct{ username, displayName, email string }

// record reduces f to what the index keeps. Callers hold the index lock.
func (x *Index) record(f facts.Fact) record {
	return record{AuditID: f.AuditID, Actor: x.actor(f.Actor), Collection: f.Collection, Stage: f.Stage, removal: f.IsRemoval()}
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
