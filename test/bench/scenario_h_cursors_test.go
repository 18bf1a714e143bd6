package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/test/harness"
)

// Targets of scenario H, the warm restart (issue 12).
const (
	warmRestartReady    = 0.3 // seconds, start to Ready
	warmRestartRequests = 2   // forge requests of the whole run
)

// BenchmarkRestartWithCursors is scenario H: D′ (a restart with nothing
// changed, 2,000 ConfigMaps) without Redis, then with resume cursors in a
// real redis-server. Figures of each: start to Ready, ConfigMap bytes the
// API server sent, forge requests, commits (none). The git forge and the
// GitHub simulator (where forge requests are counted).
func BenchmarkRestartWithCursors(b *testing.B) {
	forEachForgeOf(b, []forgeKind{forgeGit, forgeGitHub}, restartWithCursors)
}

func restartWithCursors(b *testing.B, fk forgeKind) {
	e := sharedEnv(b)
	ctx := context.Background()
	redis, err := harness.StartRedis(b.TempDir())
	require.NoError(b, err)
	b.Cleanup(redis.Stop)
	rdb := goredis.NewClient(&goredis.Options{Addr: redis.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })

	m, f := newFleetMirror(b, e, "cursors", mirrorOptions{forge: fk})
	prefix := m.name + ":"
	withRedis := append([]string{"--redis-addr=" + redis.Addr(), "--redis-key-prefix=" + prefix}, asChart(m)...)
	first, err := startOperatorArgs(e, m.name+"-first", withRedis...)
	require.NoError(b, err)
	_, err = pollHeads(ctx, m.remote, first, 150*time.Millisecond, 5*time.Minute, holdsFleet(m, f, f.size()))
	require.NoError(b, err, "waiting for all %d ConfigMaps in Git", f.size())
	require.NoError(b, waitReady(ctx, e, m, first, time.Minute))
	require.NoError(b, waitForCursors(ctx, first, rdb, prefix))
	stopOperator(b, first)

	restartWithNothingChanged(b, e, m, "H restart, nothing changed, no Redis", restartLimits{}, asChart(m)...)
	restartWithNothingChanged(b, e, m, "H restart, nothing changed, resume cursors", restartLimits{
		ready: warmRestartReady, requests: warmRestartRequests}, withRedis...)
}

// waitForCursors waits until every stream of the run has stored its
// cursor: as many keys under prefix as the run started replays.
func waitForCursors(ctx context.Context, op *operatorRun, rdb *goredis.Client, prefix string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		s, err := op.scrape(ctx)
		if err != nil {
			return err
		}
		streams := int(s.sum("gitopsreverser_watch_replays_total"))
		keys, err := rdb.Keys(ctx, prefix+"cursor:*").Result()
		if err != nil {
			return fmt.Errorf("listing the stored cursors: %w", err)
		}
		if streams > 0 && len(keys) >= streams {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d cursors stored after a minute (log %s)", len(keys), streams, op.logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
