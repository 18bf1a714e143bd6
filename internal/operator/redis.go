package operator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/configbutler/gitops-reverser/internal/metrics"
	"github.com/configbutler/gitops-reverser/internal/redisconn"
)

// redisSetup is the operator's Redis: one client, the monitor that says
// when it is away, and the failure counts.
type redisSetup struct {
	opts     *redisconn.Options
	prefix   string
	client   *goredis.Client
	monitor  *redisconn.Monitor
	observer redisObserver
}

// clientOptions are the go-redis options of another client of the same
// Redis (the fact transport keeps its own connections).
func (r *redisSetup) clientOptions() (*goredis.Options, error) {
	opts, err := r.opts.ClientOptions()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return opts, nil
}

// setupRedis connects to Redis when o.Redis is set (nil without Redis) and
// adds its monitor. Redis gates no probe: without it the operator mirrors
// on (cursors are retried, facts stay in process), and a readiness check
// on it would take the audit ingress and the admission webhook out of
// their Services, so the API server's audit batches and admissions would
// fail for as long as Redis is away. The monitor logs the outage instead,
// once, and redis_up shows it.
func setupRedis(mgr ctrl.Manager, o Options, reg prometheus.Registerer) (*redisSetup, error) {
	if o.Redis == nil {
		return nil, nil
	}
	client, err := o.Redis.Connect()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	rm := metrics.NewRedisMetrics()
	if err := rm.Register(reg); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("registering Redis metrics: %w", err)
	}
	log := ctrl.Log.WithName("redis")
	redisconn.UseLogger(log)
	monitor := redisconn.NewMonitor(client, o.Redis.Addr, log)
	monitor.Degraded, monitor.Up = degradedWithoutRedis(o), rm.Up
	if err := mgr.Add(monitor); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("adding the Redis monitor: %w", err)
	}
	return &redisSetup{opts: o.Redis, prefix: o.Redis.Prefix(), client: client, monitor: monitor, observer: redisObserver{RedisMetrics: rm, monitor: monitor}}, nil
}

// degradedWithoutRedis says what the operator does differently while Redis
// is away, for the outage's log line.
func degradedWithoutRedis(o Options) []string {
	degraded := []string{"resume cursors are not saved: a restart meanwhile replays every watch"}
	if o.Attribution != nil && o.Attribution.Transport == TransportRedis {
		degraded = append(degraded, "attribution facts reach only the index of the replica whose audit ingress took them; "+
			"they are published to Redis when it answers again, if younger than the fact TTL")
	}
	if o.Admission != nil {
		degraded = append(degraded, "a CommitRequest's submitter is known only to the replica that admitted it")
	}
	return degraded
}

// redisObserver counts failed Redis calls and has the monitor check at
// once, so an outage is logged when a call first fails.
type redisObserver struct {
	*metrics.RedisMetrics
	monitor *redisconn.Monitor
}

// CursorError implements mirror.CursorObserver.
func (r redisObserver) CursorError(op string, err error) {
	r.RedisMetrics.CursorError(op, err)
	r.monitor.Check()
}

// Failed counts a failed Redis call (the CommitRequest submitters').
func (r redisObserver) Failed(op string, err error) {
	r.RedisMetrics.Failed(op, err)
	r.monitor.Check()
}
