package redisconn_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/redisconn"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// pings counts the monitor's results.
type pings struct {
	mu       sync.Mutex
	up, down int
	last     bool
}

func (p *pings) observe(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = up
	if up {
		p.up++
	} else {
		p.down++
	}
}

func (p *pings) counts() (up, down int, last bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up, p.down, p.last
}

// An outage is logged once, saying what degrades, however many pings
// fail; its end once; and the Recovered functions run once.
func TestTheMonitorLogsAnOutageOnceAndItsEndOnce(t *testing.T) {
	server := startRedis(t, harness.RedisOptions{})
	client, err := redisconn.Options{Addr: server.Addr()}.Connect()
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	var log harness.SyncBuffer
	logger := funcr.New(func(prefix, args string) { _, _ = log.Write([]byte(prefix + args + "\n")) }, funcr.Options{})
	m := redisconn.NewMonitor(client, "redis://user:hunter2@"+server.Addr(), logger)
	m.Interval, m.Degraded = 20*time.Millisecond, []string{"resume cursors are not saved"}
	var p pings
	m.Up = p.observe
	var mu sync.Mutex
	recovered := 0
	m.Recovered = []func(){func() { mu.Lock(); recovered++; mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	require.Eventually(t, func() bool { up, _, _ := p.counts(); return up > 0 }, 10*time.Second, 10*time.Millisecond)
	require.Empty(t, log.String(), "nothing to say while Redis answers")

	server.Stop()
	m.Check()
	require.Eventually(t, func() bool { _, down, _ := p.counts(); return down >= 5 }, 10*time.Second, 10*time.Millisecond)
	out := log.String()
	require.Equal(t, 1, strings.Count(out, "Redis does not answer"), out)
	require.Contains(t, out, "resume cursors are not saved")
	require.NotContains(t, out, "hunter2", "credentials never reach the log")

	require.NoError(t, server.Restart())
	require.Eventually(t, func() bool { return strings.Contains(log.String(), "Redis answers again") }, 10*time.Second, 10*time.Millisecond)
	upBefore, _, _ := p.counts()
	require.Eventually(t, func() bool { up, _, _ := p.counts(); return up >= upBefore+5 }, 10*time.Second, 10*time.Millisecond)
	out = log.String()
	require.Equal(t, 1, strings.Count(out, "Redis does not answer"), out)
	require.Equal(t, 1, strings.Count(out, "Redis answers again"), out)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, recovered)
}
