package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/redisstore"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// startRedis is a real redis-server of the test's own and a client of it.
func startRedis(t testing.TB) (*harness.Redis, *goredis.Client) {
	t.Helper()
	server, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	client := goredis.NewClient(&goredis.Options{Addr: server.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	return server, client
}

func TestClaimsAreAcquiredRenewedAndReleasedOnlyByTheirOwner(t *testing.T) {
	_, client := startRedis(t)
	ctx := context.Background()
	claims := &redisstore.Claims{Client: client, Prefix: "blue:"}

	_, err := claims.Acquire(ctx, "team/github@main", "replica-a", 0)
	require.Error(t, err, "a claim without a TTL would outlive a dead owner")
	got, err := claims.Acquire(ctx, "team/github@main", "replica-a", time.Minute)
	require.NoError(t, err)
	require.True(t, got)
	got, err = claims.Acquire(ctx, "team/github@main", "replica-a", time.Minute)
	require.NoError(t, err)
	require.True(t, got, "the owner acquiring again keeps its claim")
	got, err = claims.Acquire(ctx, "team/github@main", "replica-b", time.Minute)
	require.NoError(t, err)
	require.False(t, got, "a held claim is not taken")
	got, heldFor, err := claims.TryAcquire(ctx, "team/github@main", "replica-b", time.Minute)
	require.NoError(t, err)
	require.False(t, got)
	require.Greater(t, heldFor, 50*time.Second, "how long replica-a's claim has left")
	require.LessOrEqual(t, heldFor, time.Minute)
	owner, err := claims.Owner(ctx, "team/github@main")
	require.NoError(t, err)
	require.Equal(t, "replica-a", owner)
	ttl, err := client.PTTL(ctx, "blue:claim:team/github@main").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 50*time.Second, "under the installation's prefix, with its TTL")

	got, err = claims.Acquire(ctx, "team/github@docs", "replica-b", time.Minute)
	require.NoError(t, err)
	require.True(t, got)
	lost, err := claims.Renew(ctx, "replica-a", []string{"team/github@main", "team/github@docs", "team/github@gone"}, time.Hour)
	require.NoError(t, err)
	require.Equal(t, []string{"team/github@docs", "team/github@gone"}, lost, "only the claims the token holds are renewed")
	ttl, err = client.PTTL(ctx, "blue:claim:team/github@main").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute)
	ttl, err = client.PTTL(ctx, "blue:claim:team/github@docs").Result()
	require.NoError(t, err)
	require.LessOrEqual(t, ttl, time.Minute, "another owner's claim keeps its own TTL")

	released, err := claims.Release(ctx, "team/github@docs", "replica-a")
	require.NoError(t, err)
	require.False(t, released, "a release by a non-owner frees nothing")
	owner, err = claims.Owner(ctx, "team/github@docs")
	require.NoError(t, err)
	require.Equal(t, "replica-b", owner)
	released, err = claims.Release(ctx, "team/github@main", "replica-a")
	require.NoError(t, err)
	require.True(t, released)
	owner, err = claims.Owner(ctx, "team/github@main")
	require.NoError(t, err)
	require.Empty(t, owner)
	got, err = claims.Acquire(ctx, "team/github@main", "replica-b", time.Minute)
	require.NoError(t, err)
	require.True(t, got, "a released claim is free at once")
}

func TestClaimsTwoOwnersRacingOneWins(t *testing.T) {
	_, client := startRedis(t)
	ctx := context.Background()
	claims := &redisstore.Claims{Client: client, Prefix: "blue:"}
	for round := range 20 {
		branch := "team/github@race-" + string(rune('a'+round))
		tokens := []string{"replica-a", "replica-b", "replica-c"}
		won := make([]bool, len(tokens))
		errs := make([]error, len(tokens))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, token := range tokens {
			wg.Go(func() {
				<-start
				won[i], errs[i] = claims.Acquire(ctx, branch, token, time.Minute)
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		winners := 0
		for i, w := range won {
			if w {
				winners++
				owner, err := claims.Owner(ctx, branch)
				require.NoError(t, err)
				require.Equal(t, tokens[i], owner)
			}
		}
		require.Equal(t, 1, winners, "round %d", round)
	}
}

func TestClaimsAnExpiredClaimIsLostToItsOwnerAndFreeForAnother(t *testing.T) {
	_, client := startRedis(t)
	ctx := context.Background()
	claims := &redisstore.Claims{Client: client, Prefix: "blue:"}
	got, err := claims.Acquire(ctx, "team/github@main", "replica-a", 50*time.Millisecond)
	require.NoError(t, err)
	require.True(t, got)
	// The sentinel is Redis itself forgetting the key, not a sleep.
	require.Eventually(t, func() bool {
		n, err := client.Exists(ctx, "blue:claim:team/github@main").Result()
		return err == nil && n == 0
	}, 5*time.Second, 10*time.Millisecond)

	got, err = claims.Acquire(ctx, "team/github@main", "replica-b", time.Minute)
	require.NoError(t, err)
	require.True(t, got, "an expired claim is another replica's to take")
	lost, err := claims.Renew(ctx, "replica-a", []string{"team/github@main"}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{"team/github@main"}, lost, "the cut-off owner learns it lost the branch")
	owner, err := claims.Owner(ctx, "team/github@main")
	require.NoError(t, err)
	require.Equal(t, "replica-b", owner, "the old owner's renew did not take it back")
}

func TestClaimsRedisDownIsAnError(t *testing.T) {
	server, client := startRedis(t)
	claims := &redisstore.Claims{Client: client, Prefix: "blue:"}
	server.Stop()
	_, err := claims.Acquire(context.Background(), "team/github@main", "replica-a", time.Minute)
	require.Error(t, err)
	_, err = claims.Renew(context.Background(), "replica-a", []string{"team/github@main"}, time.Minute)
	require.Error(t, err, "a renew that cannot reach Redis is not a renew")
}
