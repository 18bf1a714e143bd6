package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/facts/factstest"
)

func TestConformance(t *testing.T) {
	factstest.Run(t,
		func(*testing.T) facts.Transport { return New(Options{Retention: time.Hour}) },
		factstest.WithRetention(100*time.Millisecond, func(*testing.T) facts.Transport {
			return New(Options{Retention: 100 * time.Millisecond})
		}))
}

var cms = facts.StreamKey{Route: "prod", Resource: "configmaps"}

func publish(t *testing.T, tr *Transport, fs ...facts.Fact) {
	t.Helper()
	require.NoError(t, tr.Publish(context.Background(), cms, fs))
}

// A follower that falls more than the ring holds behind is told how many
// it lost and goes on from the oldest fact still held.
func TestFollowerThatFellBehindIsToldTheGap(t *testing.T) {
	tr := New(Options{MaxLen: 4})
	hold, held := make(chan struct{}), make(chan struct{})
	var calls []string
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		done <- tr.Follow(ctx, cms, time.Time{},
			func(fs []facts.Fact) {
				calls = append(calls, fmt.Sprint(factstest.AuditIDs(fs)))
				if len(calls) == 1 {
					close(held)
					<-hold // the follower is stuck in its first delivery
				}
				if fs[len(fs)-1].AuditID == "f-010" {
					cancel()
				}
			},
			func(lost int) { calls = append(calls, fmt.Sprintf("gap %d", lost)) })
	}()
	publish(t, tr, factstest.Numbered("f", 0, 1)...)
	<-held
	for _, f := range factstest.Numbered("f", 1, 11) { // f-01 .. f-10; the ring keeps f-07 .. f-10
		publish(t, tr, f)
	}
	close(hold)
	require.ErrorIs(t, <-done, context.Canceled)
	require.Equal(t, []string{"[f-000]", "gap 6", "[f-007 f-008 f-009 f-010]"}, calls)
}

// Publish never waits on a follower, even one that never returns from a
// delivery; the other followers still get everything.
func TestPublishIsNotBlockedByAFollowerThatNeverReads(t *testing.T) {
	tr := New(Options{MaxLen: 8})
	stuck := make(chan struct{})
	delivered := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); close(stuck) }() // cancel first: the follower must not get a second delivery
	go func() {
		_ = tr.Follow(ctx, cms, time.Time{}, func([]facts.Fact) {
			close(delivered)
			<-stuck
		}, func(int) {})
	}()
	publish(t, tr, factstest.Numbered("first", 0, 1)...)
	<-delivered

	// Far more than the ring holds, one Publish at a time: each returns
	// although the stuck follower will never read any of them.
	for _, f := range factstest.Numbered("f", 0, 50) {
		publish(t, tr, f)
	}
	publish(t, tr, facts.Fact{AuditID: "end"})

	got := factstest.Follow(t, tr, cms, time.Time{}).Until(t, "end")
	require.Equal(t, []string{"f-043", "f-044", "f-045", "f-046", "f-047", "f-048", "f-049", "end"}, factstest.AuditIDs(got))
}

// A new follower is never given a fact published more than Retention ago,
// whatever its since; one within Retention it is.
func TestRetentionByPublishTime(t *testing.T) {
	start := time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	tr := New(Options{Retention: time.Minute, Clock: clk})

	publish(t, tr, facts.Fact{AuditID: "t0"})
	clk.SetTime(start.Add(40 * time.Second))
	publish(t, tr, facts.Fact{AuditID: "t40"})
	clk.SetTime(start.Add(70 * time.Second)) // t0 is past retention, t40 is not
	publish(t, tr, facts.Fact{AuditID: "t70"})

	for _, tc := range []struct {
		name  string
		since time.Time
		want  []string
	}{
		{"since zero", time.Time{}, []string{"t40", "t70"}},
		{"since before everything", start.Add(-time.Hour), []string{"t40", "t70"}},
		{"since the second publish", start.Add(40 * time.Second), []string{"t40", "t70"}},
		{"since just after it", start.Add(40*time.Second + time.Nanosecond), []string{"t70"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, factstest.AuditIDs(factstest.Follow(t, tr, cms, tc.since).Until(t, "t70")))
		})
	}

	// Nothing is published while the clock moves on, so nothing trims the
	// ring: it still holds t40, but a new follower is not given it.
	clk.SetTime(start.Add(105 * time.Second))
	require.Equal(t, []string{"t70"}, factstest.AuditIDs(factstest.Follow(t, tr, cms, time.Time{}).Until(t, "t70")))
}

// A publisher that reuses its slices after Publish changes nothing a
// follower reads.
func TestPublishedFactsAreDetachedFromThePublisher(t *testing.T) {
	tr := New(Options{})
	groups := []string{"team-a"}
	uids := []string{"uid-1"}
	fs := []facts.Fact{{AuditID: "x", Actor: facts.Actor{Username: "alice", Groups: groups},
		Collection: &facts.Collection{UIDs: uids}}}
	publish(t, tr, fs...)
	groups[0], uids[0], fs[0].AuditID = "changed", "changed", "changed"

	got := factstest.Follow(t, tr, cms, time.Time{}).Until(t, "x")
	require.Equal(t, []string{"team-a"}, got[0].Actor.Groups)
	require.Equal(t, []string{"uid-1"}, got[0].Collection.UIDs)
	require.Equal(t, cms, got[0].Stream)
}
