package redisstore_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/admission"
	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/redisstore"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestASubmitterRecordedByOneReplicaIsReadByAnother: two processes' records
// share one real redis-server; the one that did not serve the webhook
// still names the submitter, and a Redis that is gone costs only that.
func TestASubmitterRecordedByOneReplicaIsReadByAnother(t *testing.T) {
	server, err := harness.StartRedis(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(server.Stop)
	client := goredis.NewClient(&goredis.Options{Addr: server.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	shared := &redisstore.Submitters{Client: client, Prefix: "blue:", TTL: time.Minute}
	var failures []string
	replica := func() *admission.Submitters {
		s := admission.NewSubmitters(0, 0, nil)
		s.Shared = shared
		s.OnError = func(op string, _ error) { failures = append(failures, op) }
		return s
	}
	admitted, reconciling := replica(), replica()
	alice := facts.Actor{Username: "alice", Groups: []string{"devs"}, DisplayName: "Alice Liddell", Email: "alice@example.com"}

	admitted.Record("uid-1", alice)
	got, ok := reconciling.Submitter("uid-1")
	require.True(t, ok)
	require.Equal(t, alice, got)
	ttl, err := client.TTL(context.Background(), "blue:submitter:uid-1").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 50*time.Second)
	_, ok = reconciling.Submitter("uid-unknown")
	require.False(t, ok)
	require.Empty(t, failures)

	server.Stop()
	admitted.Record("uid-2", alice)
	got, ok = admitted.Submitter("uid-2")
	require.True(t, ok, "the replica that admitted it still knows")
	require.Equal(t, alice, got)
	_, ok = reconciling.Submitter("uid-2")
	require.False(t, ok)
	require.Equal(t, []string{"submitter_write", "submitter_read"}, failures)
}
