// Package factstest is the conformance suite of facts.Transport: every
// transport (internal/facts/memory, the Redis Streams transport) runs Run
// unchanged against a real instance of itself. It tests only the contract
// transport.go states, never how a transport keeps its facts.
package factstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

// Option tunes the suite to what a transport can promise.
type Option func(*options)

type options struct {
	resolution      time.Duration
	retention       time.Duration
	newShortRetains func(t *testing.T) facts.Transport
}

// WithTimeResolution says how finely the transport tells publish times
// apart (a Redis stream id counts milliseconds); 1ms when not given. The
// since subtests leave this much wall time between the facts before since
// and since itself.
func WithTimeResolution(d time.Duration) Option {
	return func(o *options) { o.resolution = d }
}

// WithRetention runs the retention subtest against transports from
// newTransport, whose retention is d: a fact published more than d ago is
// not delivered to a new follower. The subtest waits d of wall time, so d
// should be short, yet well beyond a goroutine's scheduling delay on a
// loaded machine (100ms), since the sentinel fact must outlive the
// follower's start; without this option the subtest is skipped.
func WithRetention(d time.Duration, newTransport func(t *testing.T) facts.Transport) Option {
	return func(o *options) { o.retention, o.newShortRetains = d, newTransport }
}

// Run runs the conformance suite; newTransport returns a transport for one
// subtest. Every subtest uses streams of its own, so the transports may
// share a backing store.
func Run(t *testing.T, newTransport func(t *testing.T) facts.Transport, opts ...Option) {
	o := options{resolution: time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	s := suite{options: o, newTransport: newTransport}
	t.Run("PublishThenFollowDeliversRetained", s.publishThenFollow)
	t.Run("FollowThenPublishDeliversLiveInOrder", s.followThenPublish)
	t.Run("OnePublishArrivesInOrder", s.onePublishInOrder)
	t.Run("EveryFollowerGetsEverything", s.twoFollowers)
	t.Run("StreamsAreIndependent", s.independentStreams)
	t.Run("FactRoundTrips", s.roundTrip)
	t.Run("FactsBeforeSinceAreNotDelivered", s.since)
	t.Run("CancelEndsFollowWithCtxError", s.cancel)
	t.Run("FactsOlderThanRetentionAreNotDelivered", s.expiry)
}

type suite struct {
	options
	newTransport func(t *testing.T) facts.Transport
}

// key returns a stream key of the subtest's own, unique across runs so a
// shared, persistent store holds no facts of an earlier run under it.
func key(t *testing.T, route, group, resource string) facts.StreamKey {
	return facts.StreamKey{
		Route:    fmt.Sprintf("%s-%s-%d", t.Name(), route, time.Now().UnixNano()),
		Group:    group,
		Resource: resource,
	}
}

// fact is a fact of stream k that says only its audit id.
func fact(k facts.StreamKey, auditID string) facts.Fact {
	return facts.Fact{AuditID: auditID, Stream: k, Verb: "update", Name: auditID}
}

func numbered(k facts.StreamKey, prefix string, n int) []facts.Fact {
	fs := Numbered(prefix, 0, n)
	for i := range fs {
		fs[i] = fact(k, fs[i].AuditID)
	}
	return fs
}

// Numbered are facts from..to-1 with only an audit id, prefix-NNN.
func Numbered(prefix string, from, to int) []facts.Fact {
	fs := make([]facts.Fact, 0, to-from)
	for i := from; i < to; i++ {
		fs = append(fs, facts.Fact{AuditID: fmt.Sprintf("%s-%03d", prefix, i)})
	}
	return fs
}

func publish(t *testing.T, tr facts.Transport, k facts.StreamKey, fs ...facts.Fact) {
	t.Helper()
	require.NoError(t, tr.Publish(context.Background(), k, fs))
}

func requireIDs(t *testing.T, want []facts.Fact, got []facts.Fact) {
	t.Helper()
	require.Equal(t, AuditIDs(want), AuditIDs(got))
}

func (s suite) publishThenFollow(t *testing.T) {
	tr := s.newTransport(t)
	k := key(t, "a", "", "configmaps")
	retained := numbered(k, "retained", 5)
	publish(t, tr, k, retained[:2]...)
	publish(t, tr, k, retained[2:]...)

	// since zero and since an hour ago both mean "everything retained".
	for _, since := range []time.Time{{}, time.Now().Add(-time.Hour)} {
		requireIDs(t, retained, Follow(t, tr, k, since).Until(t, "retained-004"))
	}
}

func (s suite) followThenPublish(t *testing.T) {
	tr := s.newTransport(t)
	k := key(t, "a", "", "configmaps")
	f := Follow(t, tr, k, time.Time{})
	// The follower is live once it has the first sentinel; what follows is
	// delivered as it is published.
	publish(t, tr, k, fact(k, "live"))
	f.Until(t, "live")

	want := numbered(k, "update", 20)
	for _, fa := range want {
		publish(t, tr, k, fa)
	}
	requireIDs(t, want, f.Until(t, "update-019"))
}

func (s suite) onePublishInOrder(t *testing.T) {
	tr := s.newTransport(t)
	k := key(t, "a", "apps", "deployments")
	before := Follow(t, tr, k, time.Time{})
	want := numbered(k, "batch", 100)
	publish(t, tr, k, want...)
	requireIDs(t, want, before.Until(t, "batch-099"))
	requireIDs(t, want, Follow(t, tr, k, time.Time{}).Until(t, "batch-099"))
}

func (s suite) twoFollowers(t *testing.T) {
	tr := s.newTransport(t)
	k := key(t, "a", "", "secrets")
	one, two := Follow(t, tr, k, time.Time{}), Follow(t, tr, k, time.Time{})
	want := numbered(k, "fact", 30)
	for i := 0; i < len(want); i += 10 {
		publish(t, tr, k, want[i:i+10]...)
	}
	requireIDs(t, want, one.Until(t, "fact-029"))
	requireIDs(t, want, two.Until(t, "fact-029"))
}

func (s suite) independentStreams(t *testing.T) {
	tr := s.newTransport(t)
	base := key(t, "a", "", "configmaps")
	other := base
	other.Route += "-other"
	keys := []facts.StreamKey{
		base,
		other, // another route, same type
		{Route: base.Route, Group: "", Resource: "secrets"},               // another resource
		{Route: base.Route, Group: "example.com", Resource: "configmaps"}, // another group
	}
	followers := make([]*Follower, len(keys))
	for i, k := range keys {
		followers[i] = Follow(t, tr, k, time.Time{})
	}
	for round := range 3 {
		for i, k := range keys {
			publish(t, tr, k, fact(k, fmt.Sprintf("s%d-%d", i, round)))
		}
	}
	for i, k := range keys {
		publish(t, tr, k, fact(k, fmt.Sprintf("s%d-end", i)))
	}
	for i, f := range followers {
		got := f.Until(t, fmt.Sprintf("s%d-end", i))
		require.Equal(t, []string{fmt.Sprintf("s%d-0", i), fmt.Sprintf("s%d-1", i), fmt.Sprintf("s%d-2", i),
			fmt.Sprintf("s%d-end", i)}, AuditIDs(got), "stream %s", keys[i])
		for _, fa := range got {
			require.Equal(t, keys[i], fa.Stream)
		}
	}
}

func (s suite) roundTrip(t *testing.T) {
	tr := s.newTransport(t)
	k := key(t, "prod-eu-1", "apps", "deployments")
	full := facts.Fact{
		AuditID:         "5b0e8a7c-1d2f-4e3a-9b8c-7d6e5f4a3b2c",
		Stream:          k,
		Version:         "v1",
		Verb:            "deletecollection",
		Subresource:     "scale",
		Namespace:       "team-a",
		Name:            "web",
		UID:             "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
		ResourceVersion: "123456",
		Actor: facts.Actor{
			Username:    "alice@example.com",
			Groups:      []string{"system:authenticated", "oidc:platform", "team-a"},
			DisplayName: "Alice Example",
			Email:       "alice@example.com",
		},
		Stage: time.Date(2026, 6, 30, 12, 0, 5, 123456789, time.FixedZone("CEST", 2*60*60)),
		Collection: &facts.Collection{
			LabelSelector: "app=web,tier!=db",
			FieldSelector: "metadata.namespace=team-a",
			UIDs:          []string{"uid-1", "uid-2", "uid-3"},
		},
	}
	// A fact as sparse as the accept gate lets through: no groups, no uid,
	// and a collection whose response named no objects.
	sparse := facts.Fact{
		AuditID: "sparse", Stream: k, Verb: "deletecollection", Namespace: "team-a",
		Actor:      facts.Actor{Username: "system:serviceaccount:flux-system:kustomize-controller"},
		Stage:      time.Now(), // with a monotonic reading, which no transport can carry
		Collection: &facts.Collection{LabelSelector: "app=web"},
	}
	// An admission review's fact: no resourceVersion, the version it was
	// made against and the digest of what it carried.
	review := facts.Fact{
		AuditID: "review", Stream: k, Version: "v1", Verb: "update", Namespace: "team-a", Name: "web",
		UID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Actor: facts.Actor{Username: "bob@example.com"},
		Stage: time.Date(2026, 6, 30, 12, 0, 6, 0, time.UTC), Source: facts.SourceAdmission,
		PreviousVersion: "123456", Digest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	}
	plain := fact(k, "plain")
	plain.Stage = time.Now()
	want := []facts.Fact{full, sparse, review, plain}
	publish(t, tr, k, want...)

	got := Follow(t, tr, k, time.Time{}).Until(t, "plain")
	require.Len(t, got, len(want))
	for i := range want {
		// The instant survives to the nanosecond; its location and
		// monotonic reading are not part of the contract.
		require.True(t, want[i].Stage.Equal(got[i].Stage), "Stage of %s: want %s, got %s",
			want[i].AuditID, want[i].Stage, got[i].Stage)
		w, g := want[i], got[i]
		w.Stage, g.Stage = w.Stage.UTC(), g.Stage.UTC()
		require.Equal(t, w, g)
	}
}

// waitPast lets the wall clock pass t. The transport stamps publish times
// with a clock of its own, so this is the one wait the since contract
// cannot be tested without.
func waitPast(t time.Time) {
	for d := time.Until(t); d >= 0; d = time.Until(t) {
		time.Sleep(d + time.Microsecond)
	}
}

func (s suite) since(t *testing.T) {
	tr := s.newTransport(t)
	k := key(t, "a", "", "configmaps")
	publish(t, tr, k, numbered(k, "before", 3)...)
	since := time.Now().Add(s.resolution)
	waitPast(since.Add(s.resolution))
	after := numbered(k, "after", 3)
	publish(t, tr, k, after...)

	requireIDs(t, after, Follow(t, tr, k, since).Until(t, "after-002"))
}

func (s suite) cancel(t *testing.T) {
	tr := s.newTransport(t)
	k := key(t, "a", "", "configmaps")

	// On a stream nothing was ever published to.
	idle := Follow(t, tr, k, time.Time{})
	require.ErrorIs(t, idle.Stop(), context.Canceled)

	// Live, after a delivery.
	live := Follow(t, tr, k, time.Time{})
	publish(t, tr, k, fact(k, "live"))
	live.Until(t, "live")
	require.ErrorIs(t, live.Stop(), context.Canceled)

	// A context that ended before Follow was called.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := tr.Follow(ctx, k, time.Time{}, func([]facts.Fact) {}, func(int) {})
	require.ErrorIs(t, err, context.Canceled)
}

func (s suite) expiry(t *testing.T) {
	if s.newShortRetains == nil {
		t.Skip("no WithRetention option: the transport's retention is not tested here")
	}
	tr := s.newShortRetains(t)
	k := key(t, "a", "", "configmaps")
	publish(t, tr, k, numbered(k, "expired", 3)...)
	waitPast(time.Now().Add(s.retention + s.resolution))
	f := Follow(t, tr, k, time.Time{})
	publish(t, tr, k, fact(k, "fresh"))
	require.Equal(t, []string{"fresh"}, AuditIDs(f.Until(t, "fresh")))
}
