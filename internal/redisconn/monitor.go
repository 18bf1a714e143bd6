package redisconn

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	goredis "github.com/redis/go-redis/v9"

	"github.com/configbutler/gitops-reverser/internal/redact"
)

// DefaultMonitorInterval is how often a Monitor pings Redis.
const DefaultMonitorInterval = 5 * time.Second

// Monitor tells whether Redis answers, without keeping the pod out of
// service when it does not: the operator mirrors on without Redis, and a
// readiness check on Redis would take the audit ingress and the admission
// webhook out of their Services with it. It pings every Interval, and at
// once when a user of Redis reports a failed call (Check), and logs one
// line when Redis stops answering (saying what degrades meanwhile) and one
// when it answers again.
//
// It is a controller-runtime Runnable on every replica.
type Monitor struct {
	// Client is the client whose server is pinged. Required.
	Client goredis.UniversalClient
	// Addr names the server in the log (without credentials).
	Addr string
	// Degraded says what the operator does without Redis, for the outage's
	// log line.
	Degraded []string
	// Log gets the outage's two lines.
	Log logr.Logger
	// Interval spaces the pings; DefaultMonitorInterval when zero.
	Interval time.Duration
	// Up, when set, is told every ping's result (the redis_up gauge).
	Up func(bool)
	// Recovered are called when Redis answers again after an outage.
	Recovered []func()

	check chan struct{}
}

// NewMonitor returns a monitor of client at addr (a flag value; its
// credentials are not logged).
func NewMonitor(client goredis.UniversalClient, addr string, log logr.Logger) *Monitor {
	return &Monitor{Client: client, Addr: redact.URL(addr), Log: log, check: make(chan struct{}, 1)}
}

// Check pings at once instead of at the next tick; it does not wait.
func (m *Monitor) Check() {
	select {
	case m.check <- struct{}{}:
	default:
	}
}

// Start pings until ctx ends.
func (m *Monitor) Start(ctx context.Context) error {
	interval := m.Interval
	if interval <= 0 {
		interval = DefaultMonitorInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	s := monitorState{m: m}
	for {
		err := m.ping(ctx)
		if ctx.Err() != nil {
			return nil // stopping: not an outage
		}
		s.observe(err)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-m.check:
		}
	}
}

// NeedLeaderElection is false: every replica uses Redis.
func (m *Monitor) NeedLeaderElection() bool { return false }

func (m *Monitor) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return m.Client.Ping(ctx).Err()
}

// monitorState is what the last ping found.
type monitorState struct {
	m     *Monitor
	down  bool
	since time.Time
}

// observe logs a change of reachability, once each way.
func (s *monitorState) observe(err error) {
	m := s.m
	if m.Up != nil {
		m.Up(err == nil)
	}
	switch {
	case err != nil && !s.down:
		s.down, s.since = true, time.Now()
		m.Log.Error(err, "Redis does not answer; the operator goes on without it until it does", "redis", m.Addr,
			"degraded", m.Degraded)
	case err == nil && s.down:
		s.down = false
		m.Log.Info("Redis answers again", "redis", m.Addr, "downFor", time.Since(s.since).Round(time.Second).String())
		for _, f := range m.Recovered {
			f()
		}
	}
}
