package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/configbutler/gitops-reverser/internal/admission/observer"
)

// ObserverMetrics count the admission observer's reviews.
type ObserverMetrics struct {
	reviews *prometheus.CounterVec
}

// NewObserverMetrics builds the family
// gitopsreverser_admission_observer_reviews_total{operation,outcome}.
func NewObserverMetrics() *ObserverMetrics {
	return &ObserverMetrics{reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitopsreverser_admission_observer_reviews_total",
		Help: "Admission reviews of mirrored types, by operation (CREATE, UPDATE, DELETE; empty when unreadable) and outcome: " +
			"queued (a fact was published), dry_run, ignored_operation, non_scale_subresource, no_attribution_fact, " +
			"malformed (answered 400), write_error (publishing failed; the write was allowed).",
	}, []string{"operation", "outcome"})}
}

// Register adds the family to reg, with a zero series per operation and
// outcome.
func (m *ObserverMetrics) Register(reg prometheus.Registerer) error {
	if err := reg.Register(m.reviews); err != nil {
		return err
	}
	for _, op := range []string{"CREATE", "UPDATE", "DELETE"} {
		for _, outcome := range observer.Outcomes() {
			if outcome != observer.OutcomeMalformed {
				m.reviews.WithLabelValues(op, string(outcome))
			}
		}
	}
	m.reviews.WithLabelValues("", string(observer.OutcomeMalformed))
	return nil
}

// Reviewed counts one review.
func (m *ObserverMetrics) Reviewed(operation string, outcome observer.Outcome) {
	switch operation {
	case "CREATE", "UPDATE", "DELETE", "":
	default:
		operation = "other" // a sender cannot grow the label set
	}
	m.reviews.WithLabelValues(operation, string(outcome)).Inc()
}
