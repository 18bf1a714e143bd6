package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// RedisMetrics are the families of the operator's Redis use; it
// implements mirror.CursorObserver. Register it only with --redis-addr.
type RedisMetrics struct {
	cursorWrites prometheus.Counter
	errors       *prometheus.CounterVec
	up           prometheus.Gauge
}

// redisOperations are the values of redis_errors_total{operation}.
var redisOperations = []string{"load", "save", "delete"}

// NewRedisMetrics builds the families, every operation's errors at zero.
func NewRedisMetrics() *RedisMetrics {
	m := &RedisMetrics{
		cursorWrites: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "watch_cursor_writes_total",
			Help: "Resume cursors stored in Redis (each refreshes its TTL); written in batches once their changes are in Git."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "redis_errors_total",
			Help: "Failed Redis calls for resume cursors, by operation (load: the stream replays; save: retried on the next " +
				"flush; delete)."}, []string{"operation"}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "redis_up",
			Help: "1 while Redis answers PING (checked every 5 s and after a failed call), 0 while it does not; " +
				"the operator goes on without it and stays ready."}),
	}
	for _, op := range redisOperations {
		m.errors.WithLabelValues(op)
	}
	return m
}

// Register adds the families to reg.
func (m *RedisMetrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.cursorWrites, m.errors, m.up} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// CursorsWritten implements mirror.CursorObserver.
func (m *RedisMetrics) CursorsWritten(n int) { m.cursorWrites.Add(float64(n)) }

// CursorError implements mirror.CursorObserver.
func (m *RedisMetrics) CursorError(op string, err error) { m.Failed(op, err) }

// Failed counts a failed Redis operation, redis_errors_total{op}.
func (m *RedisMetrics) Failed(op string, _ error) { m.errors.WithLabelValues(op).Inc() }

// Up sets redis_up (the Redis monitor's Up).
func (m *RedisMetrics) Up(up bool) {
	if up {
		m.up.Set(1)
		return
	}
	m.up.Set(0)
}
