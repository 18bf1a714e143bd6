package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

// JournalMetrics are the families of the branches' durable write queues
// (high availability): per branch, how many journal entries wait for
// their commit and how long the oldest has waited. Only the replica that
// owns a branch reports it, so a sum over replicas is the cluster's. It
// implements branch.JournalObserver.
type JournalMetrics struct {
	depth *prometheus.GaugeVec
	age   *prometheus.GaugeVec
}

var _ branch.JournalObserver = (*JournalMetrics)(nil)

// NewJournalMetrics builds the families.
func NewJournalMetrics() *JournalMetrics {
	return &JournalMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "journal_depth",
			Help: "Journal entries (accepted writes, sweeps and markers) of a branch waiting for their commit, as its owner last read them."},
			workerLabels()),
		age: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "journal_age_seconds",
			Help: "How long the oldest journal entry of a branch has waited for its commit (0 when none waits); " +
				"a growing age is a window that cannot be committed."}, workerLabels()),
	}
}

// Register adds the families to reg.
func (m *JournalMetrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.depth, m.age} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// JournalDepth implements branch.JournalObserver.
func (m *JournalMetrics) JournalDepth(k branch.Key, entries int64, oldest time.Duration) {
	m.depth.WithLabelValues(workerValues(k)...).Set(float64(entries))
	m.age.WithLabelValues(workerValues(k)...).Set(oldest.Seconds())
}

// JournalGone implements branch.JournalObserver: the series go, so a
// branch handed to another replica is not reported twice.
func (m *JournalMetrics) JournalGone(k branch.Key) {
	m.depth.DeleteLabelValues(workerValues(k)...)
	m.age.DeleteLabelValues(workerValues(k)...)
}
