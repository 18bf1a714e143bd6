package redisstore_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/redisstore"
	"github.com/configbutler/gitops-reverser/test/harness"
)

func TestCursorsAreStoredWithATTLUnderTheInstallationsPrefixAndForgotten(t *testing.T) {
	server, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	client := goredis.NewClient(&goredis.Options{Addr: server.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	blue := &redisstore.Cursors{Client: client, Prefix: "blue:", TTL: time.Minute}
	green := &redisstore.Cursors{Client: client, Prefix: "green:"}

	got, err := blue.Load(ctx, "uid:/v1/configmaps:team")
	require.NoError(t, err)
	require.Empty(t, got, "no cursor yet")

	require.NoError(t, blue.Save(ctx, map[string]string{"uid:/v1/configmaps:team": "f 42", "uid:/v1/secrets:team": "f 43"}))
	got, err = blue.Load(ctx, "uid:/v1/configmaps:team")
	require.NoError(t, err)
	require.Equal(t, "f 42", got)
	ttl, err := client.TTL(ctx, "blue:cursor:uid:/v1/configmaps:team").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 50*time.Second, "a refreshed TTL")
	got, err = green.Load(ctx, "uid:/v1/configmaps:team")
	require.NoError(t, err)
	require.Empty(t, got, "another installation's prefix sees nothing")

	require.NoError(t, blue.Delete(ctx, "uid:/v1/configmaps:team"))
	got, err = blue.Load(ctx, "uid:/v1/configmaps:team")
	require.NoError(t, err)
	require.Empty(t, got)

	server.Stop()
	_, err = blue.Load(ctx, "uid:/v1/secrets:team")
	require.Error(t, err, "Redis down is an error, not a missing cursor")
}
