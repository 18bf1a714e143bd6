package metrics

import "github.com/prometheus/client_golang/prometheus"

// AdmissionMetrics count the /validate-operator-types webhook's reviews.
type AdmissionMetrics struct {
	reviews *prometheus.CounterVec
}

// NewAdmissionMetrics builds the family
// gitopsreverser_admission_reviews_total{outcome}.
func NewAdmissionMetrics() *AdmissionMetrics {
	return &AdmissionMetrics{reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gitopsreverser_admission_reviews_total",
		Help: "Admission reviews of the operator's own types, by outcome: recorded (a CommitRequest's submitter), ignored, malformed.",
	}, []string{"outcome"})}
}

// Register adds the family to reg.
func (m *AdmissionMetrics) Register(reg prometheus.Registerer) error { return reg.Register(m.reviews) }

// Reviewed counts one review.
func (m *AdmissionMetrics) Reviewed(outcome string) { m.reviews.WithLabelValues(outcome).Inc() }
