package metrics

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/audit"
	"github.com/configbutler/gitops-reverser/internal/facts"
)

// TestAuditRequestFamiliesAreScrapedAsZeroFromStart: every request outcome
// and unrouted reason is scraped at 0 right after registration, so an alert
// on malformed or too_large batches works before the first one.
func TestAuditRequestFamiliesAreScrapedAsZeroFromStart(t *testing.T) {
	m := NewAuditMetrics()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, m.Register(reg))

	families, err := reg.Gather()
	require.NoError(t, err)
	seen := map[string]int{}
	for _, family := range families {
		for _, series := range family.GetMetric() {
			require.Zero(t, series.GetCounter().GetValue()+float64(series.GetHistogram().GetSampleCount()), family.GetName())
			seen[family.GetName()]++
		}
	}
	outcomes := len(audit.ListOutcomes())
	require.Equal(t, map[string]int{
		"gitopsreverser_audit_eventlists_total":           outcomes,
		"gitopsreverser_audit_eventlist_events_total":     outcomes,
		"gitopsreverser_audit_fact_delay_seconds":         1,
		"gitopsreverser_audit_eventlist_duration_seconds": outcomes,
		"gitopsreverser_audit_unrouted_events_total":      len(audit.UnroutedReasons()),
	}, seen, "audit_events_total has no series until a type is known")
}

type nopTransport struct{}

func (nopTransport) Publish(context.Context, facts.StreamKey, []facts.Fact) error { return nil }
func (nopTransport) Follow(ctx context.Context, _ facts.StreamKey, _ time.Time, _ func([]facts.Fact), _ func(int)) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestAuditMetricsCountTheHandlersOutcomes: through the real handler, an
// accepted create and a dry-run create count under their outcome and
// category, the type's other outcomes exist at zero, and the request is
// counted with its events.
func TestAuditMetricsCountTheHandlersOutcomes(t *testing.T) {
	m := NewAuditMetrics()
	require.NoError(t, m.Register(prometheus.NewPedanticRegistry()))
	h, err := audit.NewHandler(audit.HandlerOptions{Transport: nopTransport{}, KnownRoute: func(string) bool { return true }, Observer: m})
	require.NoError(t, err)

	const event = `{"stage":"ResponseComplete","verb":"create","user":{"username":"bob"},"requestURI":"/api/v1/namespaces/a/configmaps%s",` +
		`"objectRef":{"resource":"configmaps","namespace":"a","name":"c","apiVersion":"v1"},"responseStatus":{"code":201},` +
		`"responseObject":{"metadata":{"name":"c","namespace":"a","uid":"u","resourceVersion":"5"}}}`
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` +
		fmt.Sprintf(event, "") + "," + fmt.Sprintf(event, "?dryRun=All") + `,{"stage":"ResponseComplete","verb":"get"}]}`
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/audit-webhook/prod", bytes.NewReader([]byte(body))))
	require.Equal(t, http.StatusOK, rec.Code)

	count := func(outcome facts.Outcome, labels ...string) float64 {
		return testutil.ToFloat64(m.events.WithLabelValues(append([]string{string(outcome), outcome.Category()}, labels...)...))
	}
	cm := []string{"", "v1", "configmaps", "create"}
	require.Equal(t, 1.0, count(facts.OutcomeQueued, cm...))
	require.Equal(t, 1.0, count(facts.OutcomeDryRun, cm...))
	require.Equal(t, 1.0, count(facts.OutcomeReadOnlyOrUnknownVerb, "", "", "", "get"))
	require.Equal(t, len(facts.Outcomes())+1, testutil.CollectAndCount(m.events),
		"every outcome of configmaps/create, and the one read")
	require.Equal(t, 1.0, testutil.ToFloat64(m.lists.WithLabelValues(string(audit.ListOK))))
	require.Equal(t, 3.0, testutil.ToFloat64(m.listEvents.WithLabelValues(string(audit.ListOK))))
}
