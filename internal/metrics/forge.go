package metrics

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// ForgeMetrics counts the HTTP requests forge clients make.
type ForgeMetrics struct {
	requests *prometheus.CounterVec
	budget   *prometheus.GaugeVec
	opened   *prometheus.CounterVec
}

// NewForgeMetrics builds the forge families.
func NewForgeMetrics() *ForgeMetrics {
	return &ForgeMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "forge_requests_total",
			Help: "HTTP requests to forge APIs, by forge, operation (method and path pattern) and status code."},
			[]string{"forge", "operation", "status"}),
		budget: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "forge_rate_budget_remaining",
			Help: "Requests left in the forge's current rate-limit window, as its last response reported."},
			[]string{"forge", "provider_namespace", "provider"}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "forge_clients_opened_total",
			Help: "Forge clients built from a GitProvider's settings, by forge: a GitProvider check, or a branch worker whose settings changed."},
			[]string{"forge"}),
	}
}

// Register adds the families to reg.
func (m *ForgeMetrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.budget, m.opened} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// SetBudget records a provider's remaining request budget.
func (m *ForgeMetrics) SetBudget(forge, namespace, provider string, remaining int) {
	m.budget.WithLabelValues(forge, namespace, provider).Set(float64(remaining))
}

// Opened counts a forge client built.
func (m *ForgeMetrics) Opened(forge string) { m.opened.WithLabelValues(forge).Inc() }

// Transport wraps next so every request is counted, and counts them into
// *count as well (for requests per commit).
func (m *ForgeMetrics) Transport(forge string, next http.RoundTripper, count *atomic.Int64) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return countingTransport{forge: forge, next: next, metrics: m, count: count}
}

type countingTransport struct {
	forge   string
	next    http.RoundTripper
	metrics *ForgeMetrics
	count   *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	status := "error"
	if err == nil {
		status = strconv.Itoa(resp.StatusCode)
	}
	if t.count != nil {
		t.count.Add(1)
	}
	t.metrics.requests.WithLabelValues(t.forge, Operation(req.Method, req.URL.Path), status).Inc()
	return resp, err
}

// objectID matches git object ids in paths.
var objectID = regexp.MustCompile(`\b[0-9a-f]{40}\b|\b[0-9a-f]{64}\b`)

// Operation turns a request into a bounded label: the method and the path
// below the repository, with object ids and ref names replaced.
func Operation(method, path string) string {
	p := path
	for _, marker := range []string{"/repository/", "/git/", "/contents", "/branches", "/access_tokens"} {
		if i := strings.Index(p, marker); i >= 0 {
			p = p[i:]
			break
		}
	}
	p = objectID.ReplaceAllString(p, "{sha}")
	if i := strings.Index(p, "/refs/heads/"); i >= 0 {
		p = p[:i] + "/refs/heads/{branch}"
	}
	if i := strings.Index(p, "/ref/heads/"); i >= 0 {
		p = p[:i] + "/ref/heads/{branch}"
	}
	if strings.HasPrefix(p, "/contents/") {
		p = "/contents/{path}"
	}
	if strings.HasPrefix(p, "/branches/") {
		p = "/branches/{branch}"
	}
	if strings.HasPrefix(p, "/repository/branches/") {
		p = "/repository/branches/{branch}"
	}
	if p == path {
		p = "/" // repository or project metadata
	}
	return method + " " + p
}
