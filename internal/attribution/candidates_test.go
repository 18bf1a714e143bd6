package attribution

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

const (
	digestV1 = "d1d1d1d1"
	digestV2 = "d2d2d2d2"
)

// review is an admission fact of team-a/web (uid u1) staged at t0+offset:
// an update made against prev carrying digest, a create carrying digest
// (prev ""), or a delete.
func review(id, verb string, actor facts.Actor, offset time.Duration, prev, digest string) facts.Fact {
	f := fact(id, verb, actor, offset)
	f.UID, f.Source, f.PreviousVersion, f.Digest = "u1", facts.SourceAdmission, prev, digest
	return f
}

func scale(id string, actor facts.Actor, prev string) facts.Fact {
	f := review(id, "update", actor, 0, prev, "")
	f.Subresource = "scale"
	return f
}

// watched is a watch event on team-a/web (uid u1) at rv whose grace is
// over: an update from prev showing digest, a create (prev ""), or a
// removal.
func watched(kind, rv, prev, digest string) Query {
	q := event(kind == "removal", "u1", rv, true)
	q.Created, q.PreviousVersion, q.Digest = kind == "create", prev, digest
	return q
}

func TestConfirms(t *testing.T) {
	update := candidate{uid: "u1", previousVersion: "10", digest: digestV1}
	create := candidate{create: true, uid: "u1", digest: digestV1}
	removal := candidate{removal: true, uid: "u1", stage: t0.UnixNano()}
	stale := removal
	stale.stage = t0.Add(-2 * time.Minute).UnixNano()
	deletionStamped := func(at time.Time) Query {
		q := watched("removal", "12", "11", "")
		q.WrittenAt = at
		return q
	}
	cases := []struct {
		name string
		q    Query
		c    candidate
		want bool
	}{
		{"an update made against the previous version, carrying what the event shows", watched("update", "11", "10", digestV1), update, true},
		{"an update made against an older version (a retried patch's first attempt)", watched("update", "12", "11", digestV1), update, false},
		{"an update whose content is not what was persisted", watched("update", "11", "10", digestV2), update, false},
		{"an update of another object", func() Query { q := watched("update", "11", "10", digestV1); q.UID = "u2"; return q }(), update, false},
		{"an update when the stream does not know the previous version", watched("update", "11", "", digestV1), update, false},
		{"a /scale carries no digest: the version alone", watched("update", "11", "10", digestV2),
			candidate{uid: "u1", previousVersion: "10", stage: t0.UnixNano()}, true},
		{"a /scale reviewed long before the change the API server dates", func() Query {
			q := watched("update", "11", "10", digestV2)
			q.WrittenAt = t0.Add(time.Minute)
			return q
		}(), candidate{uid: "u1", previousVersion: "10", stage: t0.UnixNano()}, false},
		{"an update never confirms a removal", watched("removal", "12", "11", ""), update, false},
		{"a create by name, showing what it carried", watched("create", "1", "", digestV1), create, true},
		{"a create whose final object differs", watched("create", "1", "", digestV2), create, false},
		{"a create never confirms an update", watched("update", "11", "10", digestV1), create, false},
		{"a create of an earlier incarnation (another uid)", func() Query { q := watched("create", "1", "", digestV1); q.UID = "u2"; return q }(), create, false},
		{"a create review without a uid by name and digest", watched("create", "1", "", digestV1),
			candidate{create: true, digest: digestV1}, true},
		{"a create of a sensitive type carries no digest: its uid alone", watched("create", "1", "", digestV2),
			candidate{create: true, uid: "u1", stage: t0.UnixNano()}, true},
		{"a sensitive create of another uid", func() Query { q := watched("create", "1", "", digestV1); q.UID = "u2"; return q }(),
			candidate{create: true, uid: "u1", stage: t0.UnixNano()}, false},
		{"a create review with neither uid nor digest names nothing", watched("create", "1", "", digestV1),
			candidate{create: true}, false},
		{"a delete by uid", watched("removal", "12", "11", ""), removal, true},
		{"a delete reviewed long before its removal arrived (a refused one; this removal went unreviewed)",
			watched("removal", "12", "11", ""), stale, false},
		{"a delete reviewed two minutes before the API server stamped the deletion", deletionStamped(t0.Add(-time.Second)), stale, false},
		{"a delete a finalizer held for two minutes: stamped when it was reviewed",
			deletionStamped(t0.Add(-2 * time.Minute).Truncate(time.Second)), stale, true},
		{"a delete reviewed when the API server stamped it", deletionStamped(t0.Truncate(time.Second)), removal, true},
		{"a delete of another object", func() Query { q := watched("removal", "12", "11", ""); q.UID = "u2"; return q }(), removal, false},
		{"a delete never confirms a write", watched("update", "11", "10", digestV1), removal, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, confirms(tc.q, tc.c))
		})
	}
}

func TestAgreed(t *testing.T) {
	a1 := record{Actor: &alice, stage: 1}
	a2 := record{Actor: &facts.Actor{Username: alice.Username}, stage: 2}
	b := record{Actor: &bob, stage: 3}
	cases := []struct {
		name             string
		confirmed        []record
		found, ambiguous bool
		latest           record
	}{
		{"none", nil, false, false, record{}},
		{"one", []record{a1}, true, false, a1},
		{"the same actor twice: the latest review", []record{a2, a1}, true, false, a2},
		{"two actors", []record{a1, b}, false, true, record{}},
		{"two actors after agreeing ones", []record{a1, a2, b}, false, true, record{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			latest, found, ambiguous := agreed(tc.confirmed)
			require.Equal(t, tc.found, found)
			require.Equal(t, tc.ambiguous, ambiguous)
			require.Equal(t, tc.latest, latest)
		})
	}
}

func TestDecide(t *testing.T) {
	audit := &match{tier: TierExact}
	admission := &match{tier: TierAdmission}
	ambiguous := &match{tier: TierAmbiguous}
	settled, graceEnd := t0.Add(250*time.Millisecond), t0.Add(3*time.Second)
	cases := []struct {
		name          string
		ev            evidence
		now           time.Time
		admissionOnly bool
		answer        *match
		final         bool
		lookAgain     time.Time
	}{
		{"audit wins at once", evidence{audit: audit, admission: admission}, t0, false, audit, true, time.Time{}},
		{"audit wins over disagreeing reviews", evidence{audit: audit, admission: ambiguous}, t0, true, audit, true, time.Time{}},
		{"admission only: a confirmed review waits to settle", evidence{admission: admission}, t0, true, nil, false, settled},
		{"admission only: settled", evidence{admission: admission}, settled, true, admission, true, time.Time{}},
		{"admission only: disagreeing reviews are final", evidence{admission: ambiguous}, t0, true, ambiguous, true, time.Time{}},
		{"with audit: a confirmed review waits for an audit fact", evidence{admission: admission}, settled, false, nil, false, graceEnd},
		{"with audit: the review at the grace's end", evidence{admission: admission}, graceEnd, false, admission, true, time.Time{}},
		{"with audit: disagreeing reviews wait for an audit fact", evidence{admission: ambiguous}, t0, false, nil, false, graceEnd},
		{"nothing yet", evidence{}, settled, true, nil, false, graceEnd},
		{"nothing in time", evidence{}, graceEnd, true, nil, true, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			candidatesAt := graceEnd
			if tc.admissionOnly {
				candidatesAt = settled
			}
			answer, final, lookAgain := decide(tc.ev, tc.now, candidatesAt, graceEnd, tc.admissionOnly)
			require.Same(t, tc.answer, answer)
			require.Equal(t, tc.final, final)
			require.Equal(t, tc.lookAgain, lookAgain)
		})
	}
}

// TestAWatchEventConfirmsItsReview: the reviews are in the index before
// the event, whose grace and settle are over, admission being the only
// source.
func TestAWatchEventConfirmsItsReview(t *testing.T) {
	cases := []struct {
		name    string
		reviews []facts.Fact
		event   Query
		tier    Tier
		actor   facts.Actor
	}{
		{"an update", []facts.Fact{review("r", "update", alice, 0, "10", digestV1)},
			watched("update", "11", "10", digestV1), TierAdmission, alice},
		{"a patch retried after a conflict: the attempt persisted",
			[]facts.Fact{review("r1", "update", alice, 0, "10", digestV1), review("r2", "update", alice, time.Millisecond, "11", digestV2),
				review("b", "update", bob, 0, "10", digestV2)},
			watched("update", "12", "11", digestV2), TierAdmission, alice},
		{"two writers against the same version: the content tells them apart",
			[]facts.Fact{review("a", "update", alice, 0, "10", digestV1), review("b", "update", bob, 0, "10", digestV2)},
			watched("update", "11", "10", digestV2), TierAdmission, bob},
		{"two writers with the same content against the same version: no guess",
			[]facts.Fact{review("a", "update", alice, 0, "10", digestV1), review("b", "update", bob, 0, "10", digestV1)},
			watched("update", "11", "10", digestV1), TierAmbiguous, facts.Actor{}},
		{"the same actor reviewed twice (a retry with the same content)",
			[]facts.Fact{review("a1", "update", alice, 0, "10", digestV1), review("a2", "update", alice, time.Millisecond, "10", digestV1)},
			watched("update", "11", "10", digestV1), TierAdmission, alice},
		{"a write that was refused after its review: nothing persisted it",
			[]facts.Fact{review("r", "update", alice, 0, "10", digestV1)},
			watched("update", "11", "10", digestV2), TierAbsent, facts.Actor{}},
		{"a /scale", []facts.Fact{scale("s", carol, "10")}, watched("update", "11", "10", digestV2), TierAdmission, carol},
		{"a create", []facts.Fact{review("c", "create", bob, 0, "", digestV1)}, watched("create", "1", "", digestV1), TierAdmission, bob},
		{"a create of a sensitive type, by its uid alone", []facts.Fact{review("c", "create", bob, 0, "", "")},
			watched("create", "1", "", digestV2), TierAdmission, bob},
		{"a create never names a later update's author", []facts.Fact{review("c", "create", bob, 0, "", digestV1)},
			watched("update", "2", "", digestV1), TierAbsent, facts.Actor{}},
		{"a delete", []facts.Fact{review("d", "delete", alice, 0, "", "")}, watched("removal", "12", "11", ""), TierAdmission, alice},
		{"a delete reviewed twice by two actors: no guess",
			[]facts.Fact{review("d1", "delete", alice, 0, "", ""), review("d2", "delete", bob, 0, "", "")},
			watched("removal", "12", "11", ""), TierAmbiguous, facts.Actor{}},
		{"an update review is no deletion evidence", []facts.Fact{review("r", "update", alice, 0, "11", digestV1)},
			watched("removal", "12", "11", ""), TierAbsent, facts.Actor{}},
		{"an audit fact wins over a confirmed review",
			[]facts.Fact{review("r", "update", alice, 0, "10", digestV1), withUID(fact("audit", "update", bob, 0), "u1", "11")},
			watched("update", "11", "10", digestV1), TierExact, bob},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			f.resolver.AdmissionOnly = true
			f.apply(tc.reviews...)
			got := f.resolver.Resolve(context.Background(), tc.event)
			require.Equal(t, tc.tier, got.Tier)
			require.Equal(t, tc.actor, got.Actor)
			require.Zero(t, got.Waited)
		})
	}
}

// With admission the only source, a confirmed review is taken once the
// event has settled, not at the grace's end; a competing review arriving
// before that makes it ambiguous.
func TestAdmissionOnlyTakesAConfirmedReviewOnceSettled(t *testing.T) {
	t.Run("settled", func(t *testing.T) {
		f := newFixture()
		f.resolver.AdmissionOnly = true
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		done := f.resolve(context.Background(), watchedNow("11", "10", digestV1))
		f.asleepOn(t, done)
		f.clock.Step(DefaultSettle)
		got := <-done
		require.Equal(t, TierAdmission, got.Tier)
		require.Equal(t, alice, got.Actor)
		require.Equal(t, DefaultSettle, got.Waited)
	})
	t.Run("no settle: taken at once", func(t *testing.T) {
		f := newFixture()
		f.resolver.AdmissionOnly, f.resolver.Settle = true, NoSettle
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		got := <-f.resolve(context.Background(), watchedNow("11", "10", digestV1))
		require.Equal(t, TierAdmission, got.Tier)
		require.Equal(t, alice, got.Actor)
		require.Zero(t, got.Waited)
	})
	t.Run("a competing review arrives first", func(t *testing.T) {
		f := newFixture()
		f.resolver.AdmissionOnly = true
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		done := f.resolve(context.Background(), watchedNow("11", "10", digestV1))
		f.asleepOn(t, done)
		f.apply(review("b", "update", bob, 0, "10", digestV1))
		got := <-done
		require.Equal(t, TierAmbiguous, got.Tier)
		require.False(t, got.Resolved())
		require.Equal(t, "none", got.ActorKind())
	})
	t.Run("the barrier brings the other replica's review: no guess, no wait", func(t *testing.T) {
		f := newFixture()
		f.resolver.AdmissionOnly = true
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		f.resolver.Barrier = func(context.Context, facts.StreamKey) error {
			f.apply(review("b", "update", bob, 0, "10", digestV1))
			return nil
		}
		got := f.resolver.Resolve(context.Background(), watchedNow("11", "10", digestV1))
		require.Equal(t, TierAmbiguous, got.Tier)
		require.Zero(t, got.Waited)
		require.Equal(t, []bool{true}, f.obs.barriers)
	})
	t.Run("a barrier reached ends the settle", func(t *testing.T) {
		f := newFixture()
		f.resolver.AdmissionOnly = true
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		f.resolver.Barrier = func(context.Context, facts.StreamKey) error { return nil }
		got := f.resolver.Resolve(context.Background(), watchedNow("11", "10", digestV1))
		require.Equal(t, TierAdmission, got.Tier)
		require.Equal(t, alice, got.Actor)
		require.Zero(t, got.Waited)
	})
	t.Run("a barrier that outlasts the settle is given up", func(t *testing.T) {
		f := newFixture()
		f.resolver.AdmissionOnly = true
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		entered := make(chan struct{})
		f.resolver.Barrier = func(ctx context.Context, _ facts.StreamKey) error {
			close(entered)
			<-ctx.Done() // Redis is slow: the settle's end cancels it
			return ctx.Err()
		}
		done := f.resolve(context.Background(), watchedNow("11", "10", digestV1))
		<-entered
		f.clock.Step(DefaultSettle)
		got := <-done
		require.Equal(t, TierAdmission, got.Tier)
		require.Equal(t, alice, got.Actor)
		require.Equal(t, DefaultSettle, got.Waited)
		require.Equal(t, []bool{false}, f.obs.barriers)
	})
	t.Run("the review arrives while the event waits", func(t *testing.T) {
		f := newFixture()
		f.resolver.AdmissionOnly = true
		done := f.resolve(context.Background(), watchedNow("11", "10", digestV1))
		f.asleepOn(t, done)
		f.clock.Step(time.Second) // past the settle, still asleep: the review is taken when it comes
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		got := <-done
		require.Equal(t, TierAdmission, got.Tier)
		require.Equal(t, alice, got.Actor)
	})
}

// With audit configured too, a confirmed review waits the grace for the
// audit fact, which wins when it comes, and answers when it does not.
func TestWithAuditTheReviewWaitsForTheAuditFact(t *testing.T) {
	t.Run("the audit fact comes", func(t *testing.T) {
		f := newFixture()
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		done := f.resolve(context.Background(), watchedNow("11", "10", digestV1))
		f.asleepOn(t, done)
		f.apply(withUID(fact("audit", "update", bob, 0), "u1", "11"))
		got := <-done
		require.Equal(t, TierExact, got.Tier)
		require.Equal(t, bob, got.Actor)
	})
	t.Run("it does not", func(t *testing.T) {
		f := newFixture()
		f.apply(review("r", "update", alice, 0, "10", digestV1))
		done := f.resolve(context.Background(), watchedNow("11", "10", digestV1))
		f.asleepOn(t, done)
		f.clock.Step(3 * time.Second)
		got := <-done
		require.Equal(t, TierAdmission, got.Tier)
		require.Equal(t, alice, got.Actor)
	})
}

func TestAnUnconfirmedReviewExpiresWithTheTTL(t *testing.T) {
	f := newFixture()
	f.resolver.AdmissionOnly = true
	f.apply(review("r", "update", alice, 0, "10", digestV1))
	require.Equal(t, 1, f.index.Len())
	f.clock.Step(5 * time.Minute)
	got := f.resolver.Resolve(context.Background(), watched("update", "11", "10", digestV1))
	require.Equal(t, TierAbsent, got.Tier, "an expired review is never read")
	f.index.Sweep()
	require.Zero(t, f.index.Len())
	require.Equal(t, 1, f.obs.evictions(EvictedExpired))
	f.index.mu.RLock()
	defer f.index.mu.RUnlock()
	require.Empty(t, f.index.streams[configmaps].candidatesByUID)
	require.Empty(t, f.index.streams[configmaps].digests)
}

func TestAReviewReadAgainIsFiledOnce(t *testing.T) {
	f := newFixture()
	r := review("r", "update", alice, 0, "10", digestV1)
	c := review("c", "create", alice, 0, "", digestV1)
	f.apply(r, c, r, c)
	require.Equal(t, 2, f.index.Len())
}

func TestAReviewThatCannotBeConfirmedIsNotFiled(t *testing.T) {
	f := newFixture()
	noKey := review("no-digest-no-uid", "create", alice, 0, "", "")
	noKey.UID = ""
	f.apply(review("no-prev", "update", alice, 0, "", digestV1), noKey)
	require.Zero(t, f.index.Len())
}

// watchedNow is watched received at t0: its settle and grace lie ahead.
func watchedNow(rv, prev, digest string) Query {
	q := watched("update", rv, prev, digest)
	q.Received = t0
	return q
}
