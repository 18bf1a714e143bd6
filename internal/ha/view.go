package ha

import (
	"slices"
	"time"
)

// Cause says why a branch changed owner (handovers_total{cause}), and why
// a member left a view.
type Cause string

const (
	// CauseGraceful: the owner left on purpose (Leave deleted its Lease).
	CauseGraceful Cause = "graceful"
	// CauseMemberLost: the owner stopped renewing and its Lease expired by
	// our clock, or (in its own view) it could not renew in time.
	CauseMemberLost Cause = "member_lost"
	// CauseMemberJoined: a new member's rendezvous weight won the branch.
	CauseMemberJoined Cause = "member_joined"
	// CauseRedisLost: the owner was cut off from Redis and suspended
	// itself.
	CauseRedisLost Cause = "redis_lost"
)

// Causes are every cause, for a metric's zero series.
func Causes() []Cause {
	return []Cause{CauseGraceful, CauseMemberLost, CauseMemberJoined, CauseRedisLost}
}

// View is one replica's picture of the live members. Versions grow by one
// per published view; a view is published only when its members changed.
type View struct {
	Version uint64
	// Members are the live members, sorted. Self is among them only while
	// SelfLive.
	Members []string
	// Self is this replica's identity.
	Self string
	// SelfLive: this replica renewed its Lease within RenewDeadline, is not
	// suspended and has not left. While false it owns nothing.
	SelfLive bool
	// Joined and Left are the changes from the previous view.
	Joined []string
	Left   []Departure
}

// Departure is a member that left a view.
type Departure struct {
	Member string
	Cause  Cause
	// LastRenewed is when its last renewal was first seen, by our clock
	// (for our own, when that renewal was sent): a failover's duration is
	// measured from it.
	LastRenewed time.Time
}

// Has says whether member is live in the view.
func (v View) Has(member string) bool {
	_, found := slices.BinarySearch(v.Members, member)
	return found
}

// Departed is the departure of member in this view, if it left in it.
func (v View) Departed(member string) (Departure, bool) {
	for _, d := range v.Left {
		if d.Member == member {
			return d, true
		}
	}
	return Departure{}, false
}

// observation is what we know of another member's Lease: the renewal we
// last saw and when we first saw it, by our own clock.
type observation struct {
	member    string
	renewal   string
	firstSeen time.Time
	duration  time.Duration
	// reachesStore: the member reached the shared store when it renewed
	// (reachesStore).
	reachesStore bool
	// uid and resourceVersion are the Lease's, so that collecting it
	// cannot delete a newer one.
	uid             string
	resourceVersion string
}

// selfState is what this replica knows of its own renewals.
type selfState struct {
	// renewed: a renewal succeeded; lastRenew is when that write was sent.
	renewed   bool
	lastRenew time.Time
	suspended bool
	left      bool
}

// expiresAt is when an observed member is dead unless a new renewal is
// seen: leaseDuration after its last renewal was first seen. Our clock
// only, so the members need not agree on the time (client-go's leader
// election decides the same way).
func (o observation) expiresAt() time.Time { return o.firstSeen.Add(o.duration) }

// selfLive says whether this replica may count itself live: the last
// renewal it sent is younger than renewDeadline, and it is neither
// suspended nor gone. Since renewDeadline < leaseDuration, and the others
// first see a renewal only after it was sent, we drop ourselves before any
// other replica can declare us dead: our owner code gives up its branches
// first.
func selfLive(now time.Time, s selfState, renewDeadline time.Duration) bool {
	return s.renewed && !s.suspended && !s.left && now.Before(s.lastRenew.Add(renewDeadline))
}

// liveMembers are the sorted live members at now and the next time the
// answer can change by the clock alone (zero when none can).
func liveMembers(now time.Time, self string, s selfState, renewDeadline time.Duration, observed map[string]observation) ([]string, time.Time) {
	var members []string
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if selfLive(now, s, renewDeadline) {
		members = append(members, self)
		earliest(s.lastRenew.Add(renewDeadline))
	}
	for _, o := range observed {
		if o.member == self || !now.Before(o.expiresAt()) {
			continue
		}
		members = append(members, o.member)
		earliest(o.expiresAt())
	}
	slices.Sort(members)
	return slices.Compact(members), next
}

// diff is what changed from prev to next members: who joined, and who left
// and why. gone holds the members whose Lease was deleted (a graceful
// leave); lastSeen when each member's last renewal was first seen.
func diff(prev, next []string, self string, s selfState, gone map[string]bool, lastSeen func(string) time.Time) ([]string, []Departure) {
	var joined []string
	var left []Departure
	for _, m := range next {
		if _, found := slices.BinarySearch(prev, m); !found {
			joined = append(joined, m)
		}
	}
	for _, m := range prev {
		if _, found := slices.BinarySearch(next, m); found {
			continue
		}
		left = append(left, Departure{Member: m, Cause: departureCause(m, self, s, gone), LastRenewed: lastSeen(m)})
	}
	return joined, left
}

// departureCause is why member left the view.
func departureCause(member, self string, s selfState, gone map[string]bool) Cause {
	switch {
	case member == self && s.left:
		return CauseGraceful
	case member == self && s.suspended:
		return CauseRedisLost
	case member != self && gone[member]:
		return CauseGraceful
	default:
		return CauseMemberLost
	}
}

// collectable are the Leases (by name) of members dead for longer than
// after, oldest first, when self is the collector: the first live member
// of view, so that one replica deletes them and the others need not write.
func collectable(now time.Time, view View, observed map[string]observation, after time.Duration) []string {
	if !view.SelfLive || len(view.Members) == 0 || view.Members[0] != view.Self {
		return nil
	}
	var names []string
	for name, o := range observed {
		if o.member != view.Self && !now.Before(o.expiresAt().Add(after)) {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(x, y string) int { return observed[x].firstSeen.Compare(observed[y].firstSeen) })
	return names
}
