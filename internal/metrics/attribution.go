package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/facts"
	"github.com/configbutler/gitops-reverser/internal/facts/fallback"
)

// AttributionMetrics are the attribution join's and the fact pipeline's
// families; it implements attribution.Observer. Build it with
// NewAttributionMetrics and register it once, beside Metrics.
type AttributionMetrics struct {
	resolutions  *prometheus.CounterVec
	wait         *prometheus.HistogramVec
	factOps      *prometheus.CounterVec
	entries      prometheus.Gauge
	evictions    *prometheus.CounterVec
	gaps         *prometheus.CounterVec
	followerErrs *prometheus.CounterVec
	followerLag  *prometheus.HistogramVec
	decodeErrs   prometheus.Counter
	held         prometheus.Gauge
	heldDone     *prometheus.CounterVec
	settles      *prometheus.CounterVec
}

var (
	_ attribution.Observer = (*AttributionMetrics)(nil)
	_ fallback.Observer    = (*AttributionMetrics)(nil)
)

// eventKinds are the values of attribution_resolution_wait_seconds{event_kind}.
var eventKinds = []string{"write", "removal"}

// NewAttributionMetrics builds the families, with a zero series for every
// label value known up front (fact ops, eviction reasons, tier × event
// kind of the wait).
func NewAttributionMetrics() *AttributionMetrics {
	m := &AttributionMetrics{
		resolutions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "attribution_resolutions_total",
			Help: "Watch events attributed, by the tier of evidence used and the kind of actor it named (user, serviceaccount, none)."},
			[]string{"tier", "actor_kind", "group", "version", "resource"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "attribution_resolution_wait_seconds",
			Help:    "How long a watch event waited for attribution evidence, by tier and event kind (write, removal).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}, []string{"tier", "event_kind"}),
		factOps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "attribution_facts_total",
			Help: "Facts filed into the index (written) and resolutions a fact answered (matched); not subtractable."},
			[]string{"op"}),
		entries: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "attribution_fact_index_entries",
			Help: "Facts the in-process index holds."}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "attribution_fact_index_evictions_total",
			Help: "Facts the index dropped, by reason (expired, type_cap, total_cap)."}, []string{"reason"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "attribution_fact_stream_gaps_total",
			Help: "Gaps in a followed fact stream: facts lost for good to retention. Should be zero."}, []string{"stream"}),
		followerErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "attribution_fact_follower_errors_total",
			Help: "Follows of a fact stream that failed or ended and were retried, by transport."}, []string{"transport"}),
		followerLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "attribution_fact_follower_lag_seconds",
			Help: "How long after its stage time the newest fact of a delivery reached the index, by transport: " +
				"audit_fact_delay_seconds plus the transport's own delay (a restart's re-warm lands in the top buckets).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 300, 600}}, []string{"transport"}),
		decodeErrs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "attribution_fact_decode_errors_total",
			Help: "Entries of a Redis fact stream a follower could not decode and skipped (another version's, or damaged). Should be zero."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "attribution_held_facts",
			Help: "Facts Redis refused that this process filed into its own index and holds to publish when Redis is back."}),
		heldDone: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "attribution_held_facts_total",
			Help: "What became of held facts: published once Redis was back, expired (older than one fact TTL by then), " +
				"overflow (pushed out by newer ones)."}, []string{"outcome"}),
		settles: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "attribution_settle_barriers_total",
			Help: "Watch events whose settle (admission as the only source, Redis transport) ended once every review published " +
				"before them had reached the index (reached), or that waited the whole settle instead (not_reached: Redis away or slow)."},
			[]string{"outcome"}),
	}
	for _, outcome := range []string{"reached", "not_reached"} {
		m.settles.WithLabelValues(outcome)
	}
	for _, outcome := range fallback.HeldOutcomes {
		m.heldDone.WithLabelValues(string(outcome))
	}
	for _, op := range []string{"written", "matched"} {
		m.factOps.WithLabelValues(op)
	}
	for _, reason := range attribution.EvictionReasons {
		m.evictions.WithLabelValues(string(reason))
	}
	for _, tier := range attribution.Tiers {
		for _, kind := range eventKinds {
			m.wait.WithLabelValues(string(tier), kind)
		}
	}
	return m
}

// Register adds the families to reg.
func (m *AttributionMetrics) Register(reg prometheus.Registerer) error {
	for _, c := range m.attributionFamilies() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *AttributionMetrics) attributionFamilies() []prometheus.Collector {
	return []prometheus.Collector{m.resolutions, m.wait, m.factOps, m.entries, m.evictions, m.gaps, m.followerErrs, m.followerLag, m.decodeErrs, m.settles,
		m.held, m.heldDone}
}

// FactsWritten implements attribution.Observer.
func (m *AttributionMetrics) FactsWritten(n int) {
	m.factOps.WithLabelValues("written").Add(float64(n))
}

// IndexEntries implements attribution.Observer.
func (m *AttributionMetrics) IndexEntries(n int) { m.entries.Set(float64(n)) }

// Evicted implements attribution.Observer.
func (m *AttributionMetrics) Evicted(reason attribution.EvictionReason) {
	m.evictions.WithLabelValues(string(reason)).Inc()
}

// Resolved implements attribution.Observer.
func (m *AttributionMetrics) Resolved(q attribution.Query, r attribution.Resolution) {
	m.resolutions.WithLabelValues(string(r.Tier), r.ActorKind(), q.Stream.Group, q.Version, q.Stream.Resource).Inc()
	m.wait.WithLabelValues(string(r.Tier), q.EventKind()).Observe(r.Waited.Seconds())
	if r.Resolved() {
		m.factOps.WithLabelValues("matched").Inc()
	}
}

// StreamGap implements attribution.Observer: one gap, however many facts
// it lost (the transport cannot always say).
func (m *AttributionMetrics) StreamGap(stream facts.StreamKey, _ int) {
	m.gaps.WithLabelValues(stream.String()).Inc()
}

// DecodeError counts a fact stream entry that could not be decoded (the
// Redis transport's DecodeError).
func (m *AttributionMetrics) DecodeError(error) { m.decodeErrs.Inc() }

// FollowerLag implements attribution.Observer.
func (m *AttributionMetrics) FollowerLag(transport string, lag time.Duration) {
	m.followerLag.WithLabelValues(transport).Observe(lag.Seconds())
}

// SettleBarrier counts a settle barrier's outcome.
func (m *AttributionMetrics) SettleBarrier(reached bool) {
	if reached {
		m.settles.WithLabelValues("reached").Inc()
		return
	}
	m.settles.WithLabelValues("not_reached").Inc()
}

// FollowerError implements attribution.Observer.
func (m *AttributionMetrics) FollowerError(transport string, _ facts.StreamKey, _ error) {
	m.followerErrs.WithLabelValues(transport).Inc()
}

// HeldFacts implements fallback.Observer.
func (m *AttributionMetrics) HeldFacts(n int) { m.held.Set(float64(n)) }

// HeldDone implements fallback.Observer.
func (m *AttributionMetrics) HeldDone(outcome fallback.HeldOutcome, n int) {
	m.heldDone.WithLabelValues(string(outcome)).Add(float64(n))
}
