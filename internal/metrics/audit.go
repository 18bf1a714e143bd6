package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/configbutler/gitops-reverser/internal/audit"
	"github.com/configbutler/gitops-reverser/internal/facts"
)

// AuditMetrics are the audit ingress families; it implements
// audit.Observer. Register it only when attribution is on.
//
// Every request outcome and unrouted reason is at zero from the start; a
// type's event series start at zero for every outcome when its first
// write arrives.
type AuditMetrics struct {
	// typesSeen are the (group, version, resource, verb) whose series exist.
	typesSeen sync.Map // audit.EventLabels → struct{}

	events       *prometheus.CounterVec
	unrouted     *prometheus.CounterVec
	lists        *prometheus.CounterVec
	listEvents   *prometheus.CounterVec
	listDuration *prometheus.HistogramVec
	factDelay    prometheus.Histogram
}

var _ audit.Observer = (*AuditMetrics)(nil)

// NewAuditMetrics builds the families.
func NewAuditMetrics() *AuditMetrics {
	m := &AuditMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "audit_events_total",
			Help: "Audit events by terminal outcome, one per event. category groups the outcomes: accepted (queued: " +
				"a fact was published), rejected (the accept gate refused it by design: a read, a failure, a dry run, a no-op, " +
				"another stage or subresource) and error (a persisted write no fact will name: no_attribution_fact, write_error; " +
				"should be zero). verb is create, update, patch, delete, deletecollection, get, list, watch or other."},
			[]string{"outcome", "category", "group", "version", "resource", "verb"}),
		unrouted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "audit_unrouted_events_total",
			Help: "Events on the shared /audit-webhook endpoint that passed the accept gate but name no route " +
				"(missing_route) or one no ClusterProvider has (unknown_route); also counted as no_attribution_fact."},
			[]string{"reason"}),
		lists: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "audit_eventlists_total",
			Help: "Requests to /audit-webhook by outcome: ok, write_error (503), malformed (400), too_large (413), " +
				"unknown_route and not_found (404), method_not_allowed (405)."}, []string{"outcome"}),
		listEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "audit_eventlist_events_total",
			Help: "Events carried by the requests to /audit-webhook, by the request's outcome (0 for a body that could not be read)."},
			[]string{"outcome"}),
		listDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "audit_eventlist_duration_seconds",
			Help:    "Time to read, gate and publish one request to /audit-webhook, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"outcome"}),
		factDelay: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "audit_fact_delay_seconds",
			Help: "How long after its stage time an accepted audit event reached the ingress. Mostly the API server's " +
				"--audit-webhook-batch-max-wait (Kubernetes' default is 30 s); a delay past --author-attribution-grace " +
				"means the change was committed unresolved before its fact came.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60}}),
	}
	for _, outcome := range audit.ListOutcomes() {
		m.lists.WithLabelValues(string(outcome))
		m.listEvents.WithLabelValues(string(outcome))
		m.listDuration.WithLabelValues(string(outcome))
	}
	for _, reason := range audit.UnroutedReasons() {
		m.unrouted.WithLabelValues(string(reason))
	}
	return m
}

// FactDelay observes one accepted event's delay.
func (m *AuditMetrics) FactDelay(delay time.Duration) { m.factDelay.Observe(delay.Seconds()) }

// Register adds the families to reg.
func (m *AuditMetrics) Register(reg prometheus.Registerer) error {
	for _, c := range m.auditFamilies() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *AuditMetrics) auditFamilies() []prometheus.Collector {
	return []prometheus.Collector{m.events, m.unrouted, m.lists, m.listEvents, m.listDuration, m.factDelay}
}

// Event implements audit.Observer. The first write of a type and verb
// creates its series for every outcome; reads only count, since the
// recommended audit policy never sends them.
func (m *AuditMetrics) Event(labels audit.EventLabels, outcome facts.Outcome) {
	if facts.IsMutatingVerb(labels.Verb) {
		if _, seen := m.typesSeen.LoadOrStore(labels, struct{}{}); !seen {
			for _, o := range facts.Outcomes() {
				m.events.WithLabelValues(eventValues(labels, o)...)
			}
		}
	}
	m.events.WithLabelValues(eventValues(labels, outcome)...).Inc()
}

func eventValues(labels audit.EventLabels, outcome facts.Outcome) []string {
	return []string{string(outcome), outcome.Category(), labels.Group, labels.Version, labels.Resource, labels.Verb}
}

// Unrouted implements audit.Observer.
func (m *AuditMetrics) Unrouted(reason audit.UnroutedReason) {
	m.unrouted.WithLabelValues(string(reason)).Inc()
}

// EventList implements audit.Observer.
func (m *AuditMetrics) EventList(outcome audit.ListOutcome, events int, took time.Duration) {
	m.lists.WithLabelValues(string(outcome)).Inc()
	m.listEvents.WithLabelValues(string(outcome)).Add(float64(events))
	m.listDuration.WithLabelValues(string(outcome)).Observe(took.Seconds())
}
