package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/configbutler/gitops-reverser/internal/ha"
)

// HAMetrics are the families of membership and branch assignment; they
// implement ha.Observer. Every replica exports its own (the scrape's pod
// label tells them apart). Register them only when HA runs.
type HAMetrics struct {
	members   prometheus.Gauge
	owned     prometheus.Gauge
	handovers *prometheus.CounterVec
	failover  prometheus.Histogram
	outage    prometheus.Gauge
}

// NewHAMetrics builds the families, every handover cause at zero.
func NewHAMetrics() *HAMetrics {
	m := &HAMetrics{
		members: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "ha_members",
			Help: "Live members in this replica's view (itself included while it counts itself live)."}),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "ha_branches_owned",
			Help: "Branches this replica owns."}),
		handovers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "ha_handovers_total",
			Help: "Branches that changed owner, counted by the replica that took them (or gave them up, for redis_lost), by cause: " +
				"graceful (the owner left), member_lost (its Lease expired), member_joined (a new member won it), " +
				"redis_lost (the owner was cut off from Redis)."}, []string{"cause"}),
		failover: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "ha_failover_duration_seconds",
			Help:    "From a lost or departed owner's last renewal seen to a new owner taking its branch.",
			Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120}}),
		outage: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "ha_store_outage",
			Help: "1 while this replica runs its branches from memory because Redis is down for every replica " +
				"(nothing is journaled and no branch can move meanwhile), else 0."}),
	}
	for _, cause := range ha.Causes() {
		m.handovers.WithLabelValues(string(cause))
	}
	return m
}

// Register adds the families to reg.
func (m *HAMetrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.members, m.owned, m.handovers, m.failover, m.outage} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Members implements ha.Observer.
func (m *HAMetrics) Members(n int) { m.members.Set(float64(n)) }

// Owned implements ha.Observer.
func (m *HAMetrics) Owned(n int) { m.owned.Set(float64(n)) }

// Handover implements ha.Observer.
func (m *HAMetrics) Handover(cause ha.Cause) { m.handovers.WithLabelValues(string(cause)).Inc() }

// Failover implements ha.Observer.
func (m *HAMetrics) Failover(d time.Duration) { m.failover.Observe(d.Seconds()) }

// StoreOutage implements ha.Observer.
func (m *HAMetrics) StoreOutage(on bool) {
	if on {
		m.outage.Set(1)
		return
	}
	m.outage.Set(0)
}

var _ ha.Observer = (*HAMetrics)(nil)
