package redis

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/facts/factstest"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// server is one real redis-server for the package's tests; every test uses
// streams of its own.
var server *harness.Redis

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "facts-redis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// No redis-server fails the package: the transport is only ever tested
	// against a real one.
	server, err = harness.StartRedis(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting redis-server:", err)
		os.Exit(1)
	}
	code := m.Run()
	server.Stop()
	if code == 0 {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

func newTransport(t *testing.T, opts Options) *Transport {
	tr := New(&goredis.Options{Addr: server.Addr()}, opts)
	t.Cleanup(func() { require.NoError(t, tr.Close()) })
	return tr
}

func TestConformance(t *testing.T) {
	factstest.Run(t,
		func(t *testing.T) facts.Transport { return newTransport(t, Options{Retention: time.Hour}) },
		factstest.WithTimeResolution(time.Millisecond),
		factstest.WithRetention(200*time.Millisecond, func(t *testing.T) facts.Transport {
			return newTransport(t, Options{Retention: 200 * time.Millisecond})
		}))
}

var cms = facts.StreamKey{Route: "prod", Resource: "configmaps"}

// uniqueKey is a stream of the test's own, unique across runs.
func uniqueKey(t *testing.T) facts.StreamKey {
	k := cms
	k.Route = fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	return k
}

// A follower that falls behind a MaxLen trim is told exactly how many facts
// it lost and goes on from the oldest fact still held.
func TestFollowerThatFellBehindATrimIsToldTheGap(t *testing.T) {
	tr := newTransport(t, Options{MaxLen: 10})
	k := uniqueKey(t)
	hold, held := make(chan struct{}), make(chan struct{})
	var calls []string
	var delivered []facts.Fact
	lost := -1
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		done <- tr.Follow(ctx, k, time.Time{},
			func(fs []facts.Fact) {
				calls = append(calls, "facts")
				delivered = append(delivered, fs...)
				if len(calls) == 1 {
					close(held)
					<-hold // the follower is stuck in its first delivery
				}
				if fs[len(fs)-1].AuditID == "f-499" {
					cancel()
				}
			},
			func(n int) {
				calls = append(calls, "gap")
				lost = n
			})
	}()
	require.NoError(t, tr.Publish(ctx, k, factstest.Numbered("f", 0, 1)))
	<-held
	// One at a time, so that every XADD trims: "MAXLEN ~" drops whole
	// nodes of the stream (100 entries), so some hundreds are kept.
	for _, f := range factstest.Numbered("f", 1, 500) {
		require.NoError(t, tr.Publish(context.Background(), k, []facts.Fact{f}))
	}
	close(hold)
	require.ErrorIs(t, <-done, context.Canceled)

	require.Equal(t, "facts", calls[0])
	require.Equal(t, "gap", calls[1], "calls: %v", calls)
	require.Positive(t, lost)
	require.NotContains(t, calls[2:], "gap")
	want := append(factstest.Numbered("f", 0, 1), factstest.Numbered("f", 1+lost, 500)...)
	require.Equal(t, factstest.AuditIDs(want), factstest.AuditIDs(delivered))
}

// An entry the follower cannot decode is skipped and reported; the facts
// around it are delivered, and it is no gap.
func TestUndecodableEntriesAreSkippedAndReported(t *testing.T) {
	var decodeErrors []error
	tr := newTransport(t, Options{DecodeError: func(err error) { decodeErrors = append(decodeErrors, err) }})
	k := uniqueKey(t)
	ctx := context.Background()
	require.NoError(t, tr.Publish(ctx, k, factstest.Numbered("before", 0, 1)))
	raw := goredis.NewClient(&goredis.Options{Addr: server.Addr()})
	defer raw.Close()
	for _, values := range []map[string]any{
		{fieldSeq: "2", fieldFact: "{not json"},  // numbered, so counted
		{fieldFact: `{"v":1,"id":"unnumbered"}`}, // no number
		{fieldSeq: "3", fieldFact: `{"v":99,"id":"future"}`},
	} {
		require.NoError(t, raw.XAdd(ctx, &goredis.XAddArgs{Stream: tr.Key(k), Values: values}).Err())
	}
	require.NoError(t, tr.Publish(ctx, k, factstest.Numbered("after", 0, 1)))

	f := factstest.Follow(t, tr, k, time.Time{})
	require.Equal(t, []string{"before-000", "after-000"}, factstest.AuditIDs(f.Until(t, "after-000")))
	require.ErrorIs(t, f.Stop(), context.Canceled) // after Stop, decodeErrors is the test's alone
	require.Len(t, decodeErrors, 3)
	require.ErrorContains(t, decodeErrors[0], "decoding fact")
	require.ErrorIs(t, decodeErrors[1], errNoSeq)
	require.ErrorContains(t, decodeErrors[2], "wire version 99")
}

// A stream deleted under a live follower begins again at number 1: what
// it held is unknown to the follower, so it is told a gap of unknown size.
func TestStreamBegunAgainIsAGapOfUnknownSize(t *testing.T) {
	tr := newTransport(t, Options{})
	k := uniqueKey(t)
	ctx := context.Background()
	f := factstest.Follow(t, tr, k, time.Time{})
	require.NoError(t, tr.Publish(ctx, k, factstest.Numbered("old", 0, 2)))
	require.Equal(t, []string{"old-000", "old-001"}, factstest.AuditIDs(f.Until(t, "old-001")))

	raw := goredis.NewClient(&goredis.Options{Addr: server.Addr()})
	defer raw.Close()
	last, err := raw.XRevRangeN(ctx, tr.Key(k), "+", "-", 1).Result()
	require.NoError(t, err)
	require.NoError(t, raw.Del(ctx, tr.Key(k)).Err())
	// A stream begun again within the millisecond of the follower's last
	// entry numbers its first entry below the follower's position, where
	// no XREAD looks; a stream is not deleted and refilled that fast
	// outside a test. Wait for the server's clock to pass it.
	lastMs, err := strconv.ParseInt(strings.SplitN(last[0].ID, "-", 2)[0], 10, 64)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		now, err := raw.Time(ctx).Result()
		return err == nil && now.UnixMilli() > lastMs
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, tr.Publish(ctx, k, factstest.Numbered("new", 0, 1)))

	require.Equal(t, factstest.Delivery{Gap: true, Lost: 0}, f.Next(t))
	require.Equal(t, []string{"new-000"}, factstest.AuditIDs(f.Next(t).Facts))
}
