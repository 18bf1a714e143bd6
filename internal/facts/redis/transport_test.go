package redis

import (
	"fmt"
	"os"
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
