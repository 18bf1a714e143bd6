package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/redisstore"
)

// roundTrips counts the client's round trips to Redis: one per command,
// one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (r *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}

func (r *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// benchEntry is about a journaled ConfigMap write: 1 KiB of JSON.
var benchEntry = bytes.Repeat([]byte("x"), 1024)

func benchJournal(b *testing.B) (*redisstore.Journal, *roundTrips) {
	b.Helper()
	_, client := startRedis(b)
	trips := &roundTrips{}
	client.AddHook(trips)
	claims := &redisstore.Claims{Client: client, Prefix: "bench:"}
	got, err := claims.Acquire(context.Background(), mainBranch, owner, time.Hour)
	require.NoError(b, err)
	require.True(b, got)
	return &redisstore.Journal{Client: client, Prefix: "bench:"}, trips
}

// BenchmarkJournalAppend: one batch of 50 writes and the 20 cursors they
// advance, journaled in one fenced script.
func BenchmarkJournalAppend(b *testing.B) {
	journal, trips := benchJournal(b)
	ctx := context.Background()
	batch := make([][]byte, 50)
	for i := range batch {
		batch[i] = benchEntry
	}
	cursors := map[string]string{}
	for i := range 20 {
		cursors[fmt.Sprintf("uid:/v1/configmaps:ns-%d", i)] = "0123456789abcdef 1234567 h0123456789abcdef0123456789abcdef01234567"
	}
	_, err := journal.Append(ctx, mainBranch, owner, batch, cursors) // loads the script
	require.NoError(b, err)
	trips.n.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := journal.Append(ctx, mainBranch, owner, batch, cursors); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(trips.n.Load())/float64(b.N), "roundtrips/op")
}

// BenchmarkJournalRead: a new owner reading a 10,000-entry journal.
func BenchmarkJournalRead(b *testing.B) {
	journal, trips := benchJournal(b)
	ctx := context.Background()
	batch := make([][]byte, 500)
	for i := range batch {
		batch[i] = benchEntry
	}
	for range 20 {
		_, err := journal.Append(ctx, mainBranch, owner, batch, nil)
		require.NoError(b, err)
	}
	trips.n.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		entries, err := journal.Read(ctx, mainBranch)
		if err != nil || len(entries) != 10000 {
			b.Fatal(err, len(entries))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(trips.n.Load())/float64(b.N), "roundtrips/op")
}
