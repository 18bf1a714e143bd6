package harness

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestRedisServesKeysAndStreamsAndReleasesPortOnStop(t *testing.T) {
	started := time.Now()
	server, err := StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	t.Logf("redis ready at %s in %s", server.Addr(), time.Since(started))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := redis.NewClient(&redis.Options{Addr: server.Addr()})
	defer client.Close()

	require.NoError(t, client.Set(ctx, "greeting", "hello", 0).Err())
	got, err := client.Get(ctx, "greeting").Result()
	require.NoError(t, err)
	require.Equal(t, "hello", got)

	firstID, err := client.XAdd(ctx, &redis.XAddArgs{
		Stream: "events", Values: map[string]any{"kind": "create", "name": "a"},
	}).Result()
	require.NoError(t, err)
	secondID, err := client.XAdd(ctx, &redis.XAddArgs{
		Stream: "events", Values: map[string]any{"kind": "delete", "name": "a"},
	}).Result()
	require.NoError(t, err)
	entries, err := client.XRange(ctx, "events", "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, firstID, entries[0].ID)
	require.Equal(t, "create", entries[0].Values["kind"])
	require.Equal(t, secondID, entries[1].ID)
	require.Equal(t, "delete", entries[1].Values["kind"])

	server.Stop()
	listener, err := net.Listen("tcp", server.Addr())
	require.NoError(t, err, "the port should be free once Stop returns")
	require.NoError(t, listener.Close())
}
