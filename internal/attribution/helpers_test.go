package attribution

import (
	"context"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/internal/facts"
)

var (
	t0         = time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)
	configmaps = facts.StreamKey{Route: "prod", Resource: "configmaps"}
	secrets    = facts.StreamKey{Route: "prod", Resource: "secrets"}

	alice    = facts.Actor{Username: "alice@example.com"}
	bob      = facts.Actor{Username: "bob@example.com"}
	carol    = facts.Actor{Username: "carol@example.com"}
	finalize = facts.Actor{Username: "system:serviceaccount:infra:finalizer"}
)

// recorder is an Observer that keeps counts.
type recorder struct {
	mu          sync.Mutex
	written     int
	entries     int
	evicted     map[EvictionReason]int
	resolutions []Resolution
	gaps        []int
	errors      int
	barriers    []bool // each SettleBarrier's reached
	// evictedCh, when set, receives every eviction.
	evictedCh chan EvictionReason
}

func (r *recorder) FactsWritten(n int) { r.mu.Lock(); r.written += n; r.mu.Unlock() }
func (r *recorder) IndexEntries(n int) { r.mu.Lock(); r.entries = n; r.mu.Unlock() }
func (r *recorder) Evicted(reason EvictionReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.evicted == nil {
		r.evicted = map[EvictionReason]int{}
	}
	r.evicted[reason]++
	if r.evictedCh != nil {
		r.evictedCh <- reason
	}
}
func (r *recorder) Resolved(_ Query, res Resolution) {
	r.mu.Lock()
	r.resolutions = append(r.resolutions, res)
	r.mu.Unlock()
}
func (r *recorder) StreamGap(_ facts.StreamKey, lost int) {
	r.mu.Lock()
	r.gaps = append(r.gaps, lost)
	r.mu.Unlock()
}
func (r *recorder) FollowerLag(string, time.Duration) {}
func (r *recorder) SettleBarrier(reached bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.barriers = append(r.barriers, reached)
}
func (r *recorder) FollowerError(string, facts.StreamKey, error) {
	r.mu.Lock()
	r.errors++
	r.mu.Unlock()
}

func (r *recorder) evictions(reason EvictionReason) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.evicted[reason]
}

type fixture struct {
	clock    *clocktesting.FakeClock
	index    *Index
	resolver *Resolver
	obs      *recorder
	// asleep receives every time a Resolve is about to sleep.
	asleep chan struct{}
}

func newFixture() *fixture {
	c := clocktesting.NewFakeClock(t0)
	obs := &recorder{}
	idx := &Index{TTL: 5 * time.Minute, Clock: c, Observer: obs}
	f := &fixture{clock: c, index: idx, obs: obs, asleep: make(chan struct{}, 16)}
	f.resolver = &Resolver{Index: idx, Grace: 3 * time.Second, Clock: c, Observer: obs,
		sleeping: func() { f.asleep <- struct{}{} }}
	return f
}

func (f *fixture) apply(fs ...facts.Fact) {
	for _, fact := range fs {
		f.index.Apply(fact.Stream, []facts.Fact{fact})
	}
}

// fact is a configmap fact staged at t0+offset.
func fact(id, verb string, actor facts.Actor, offset time.Duration) facts.Fact {
	return facts.Fact{AuditID: id, Stream: configmaps, Version: "v1", Verb: verb, Namespace: "team-a",
		Name: "web", Actor: actor, Stage: t0.Add(offset)}
}

func withUID(f facts.Fact, uid, rv string) facts.Fact {
	f.UID, f.ResourceVersion = uid, rv
	return f
}

func collection(id string, actor facts.Actor, offset time.Duration, selector string, uids ...string) facts.Fact {
	f := fact(id, "deletecollection", actor, offset)
	f.Name = ""
	f.Collection = &facts.Collection{LabelSelector: selector, UIDs: uids}
	return f
}

// event is a watch event on team-a/web; past means its grace is already
// over, so it does not wait.
func event(removal bool, uid, rv string, past bool) Query {
	q := Query{Stream: configmaps, Version: "v1", Namespace: "team-a", Name: "web", UID: uid,
		ResourceVersion: rv, Removal: removal, Labels: map[string]string{"app": "web"}, Received: t0}
	if past {
		q.Received = t0.Add(-3 * time.Second)
	}
	return q
}

// resolve starts Resolve(q) on a goroutine.
func (f *fixture) resolve(ctx context.Context, q Query) <-chan Resolution {
	done := make(chan Resolution, 1)
	go func() { done <- f.resolver.Resolve(ctx, q) }()
	return done
}

// asleepOn waits until the Resolve behind done is asleep, and fails the
// test if it returned instead.
func (f *fixture) asleepOn(t *testing.T, done <-chan Resolution) {
	t.Helper()
	select {
	case <-f.asleep:
	case r := <-done:
		t.Fatalf("resolved without waiting: %+v", r)
	}
}
