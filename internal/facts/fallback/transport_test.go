package fallback_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/facts/fallback"
	factsredis "github.com/configbutler/gitops-reverser/internal/facts/redis"
	"github.com/configbutler/gitops-reverser/test/harness"
)

var configMaps = facts.StreamKey{Route: "default", Resource: "configmaps"}

// index records what reached the local index.
type index struct {
	mu    sync.Mutex
	facts []string
}

func (x *index) apply(_ facts.StreamKey, fs []facts.Fact) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, f := range fs {
		x.facts = append(x.facts, f.AuditID)
	}
}

func (x *index) ids() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.facts...)
}

// counts records the observer's outcomes.
type counts struct {
	mu   sync.Mutex
	done map[fallback.HeldOutcome]int
	held int
}

func (c *counts) HeldFacts(n int) { c.mu.Lock(); c.held = n; c.mu.Unlock() }
func (c *counts) HeldDone(o fallback.HeldOutcome, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done[o] += n
}
func (c *counts) of(o fallback.HeldOutcome) int { c.mu.Lock(); defer c.mu.Unlock(); return c.done[o] }

type setup struct {
	redis    *harness.Redis
	rdb      *goredis.Client
	index    *index
	counts   *counts
	log      *harness.SyncBuffer
	tr       *fallback.Transport
	redisKey string
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	redis, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(redis.Stop)
	rdb := goredis.NewClient(&goredis.Options{Addr: redis.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	shared := factsredis.New(&goredis.Options{Addr: redis.Addr()}, factsredis.Options{Retention: time.Hour})
	s := &setup{redis: redis, rdb: rdb, index: &index{}, counts: &counts{done: map[fallback.HeldOutcome]int{}},
		log: &harness.SyncBuffer{}, redisKey: shared.Key(configMaps)}
	log := funcr.New(func(prefix, args string) { _, _ = s.log.Write([]byte(prefix + args + "\n")) }, funcr.Options{})
	s.tr, err = fallback.New(fallback.Options{Shared: shared, Local: s.index.apply, Retention: time.Hour,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Observer: s.counts, Log: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.tr.Close() })
	return s
}

// inRedis are the audit ids the stream holds, in stream order.
func (s *setup) inRedis(t *testing.T) []string {
	t.Helper()
	entries, err := s.rdb.XRange(context.Background(), s.redisKey, "-", "+").Result()
	require.NoError(t, err)
	var ids []string
	for _, e := range entries {
		f, _ := e.Values["f"].(string)
		_, rest, _ := strings.Cut(f, `"id":"`)
		id, _, _ := strings.Cut(rest, `"`)
		ids = append(ids, id)
	}
	return ids
}

func fact(id string, staged time.Time) []facts.Fact {
	return []facts.Fact{{AuditID: id, Verb: "update", Namespace: "team-a", Name: id, UID: "uid-" + id,
		ResourceVersion: "1", Actor: facts.Actor{Username: "alice"}, Stage: staged}}
}

// While Redis is away a publish still succeeds: its facts reach the local
// index at once and are held; once Redis is back they are published in
// order and nothing is held any more.
func TestFactsRedisRefusesReachTheIndexAndArePublishedWhenItIsBack(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	require.NoError(t, s.tr.Publish(ctx, configMaps, fact("before", time.Now())))
	require.Equal(t, []string{"before"}, s.inRedis(t))
	require.Empty(t, s.index.ids(), "with Redis up the index is fed by its follower, not by the publish")

	s.redis.Stop()
	require.NoError(t, s.tr.Publish(ctx, configMaps, fact("during-1", time.Now())))
	require.NoError(t, s.tr.Publish(ctx, configMaps, fact("during-2", time.Now())))
	require.Equal(t, []string{"during-1", "during-2"}, s.index.ids(), "the index had them when Publish returned")
	require.Equal(t, 2, s.tr.Held())

	require.NoError(t, s.redis.Restart()) // empty: it keeps nothing on disk
	require.Eventually(t, func() bool { return s.tr.Held() == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"during-1", "during-2"}, s.inRedis(t))
	require.Equal(t, 2, s.counts.of(fallback.HeldPublished))
	require.Equal(t, 1, strings.Count(s.log.String(), "held while the shared fact transport was away are published"), s.log.String())

	require.NoError(t, s.tr.Publish(ctx, configMaps, fact("after", time.Now())))
	require.Equal(t, []string{"during-1", "during-2", "after"}, s.inRedis(t), "publishes go to Redis again")
	require.Len(t, s.index.ids(), 2)
}

// A held fact older than one fact TTL when Redis is back could not name
// anybody any more: it is dropped, not published.
func TestAHeldFactOlderThanTheTTLIsNotPublished(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	s.redis.Stop()
	require.NoError(t, s.tr.Publish(ctx, configMaps, fact("stale", time.Now().Add(-2*time.Hour))))
	require.NoError(t, s.tr.Publish(ctx, configMaps, fact("fresh", time.Now())))
	require.Equal(t, []string{"stale", "fresh"}, s.index.ids())

	require.NoError(t, s.redis.Restart())
	require.Eventually(t, func() bool { return s.tr.Held() == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"fresh"}, s.inRedis(t))
	require.Equal(t, 1, s.counts.of(fallback.HeldExpired))
	require.Equal(t, 1, s.counts.of(fallback.HeldPublished))
}

// The barrier is Redis's while Redis takes publishes, and refuses at once
// while facts are held: what other processes publish meanwhile is not in
// Redis, and the held facts are in the local index already.
func TestTheBarrierIsRedisesUntilFactsAreHeld(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	require.NoError(t, s.tr.AwaitDelivered(ctx, configMaps), "an empty stream: nothing to wait for")

	s.redis.Stop()
	require.NoError(t, s.tr.Publish(ctx, configMaps, fact("during", time.Now())))
	require.Error(t, s.tr.AwaitDelivered(ctx, configMaps))
}
