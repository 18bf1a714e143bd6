package docs

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/metrics"
	"github.com/configbutler/gitops-reverser/test/harness"
)

// TestEveryMetricThePagesNameExists fails when a page names a
// gitopsreverser_ metric family the operator does not define, so a renamed
// family cannot leave an alert or a troubleshooting row pointing at nothing.
func TestEveryMetricThePagesNameExists(t *testing.T) {
	defined := definedFamilies(t)
	mentioned := regexp.MustCompile(`gitopsreverser_[a-z0-9_]*[a-z0-9]`)
	var unknown []string
	for _, p := range markdownPages(t, harness.RepoRoot()) {
		for _, name := range mentioned.FindAllString(pageText(t, p), -1) {
			if !defined[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] {
				rel, _ := filepath.Rel(harness.RepoRoot(), p)
				unknown = append(unknown, rel+": "+name)
			}
		}
	}
	sort.Strings(unknown)
	require.Empty(t, unknown, "pages name metric families the operator does not define")
}

// definedFamilies are the names of every family internal/metrics builds.
func definedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	reg := &describing{names: map[string]bool{}}
	for _, m := range []interface {
		Register(prometheus.Registerer) error
	}{metrics.New(), metrics.NewForgeMetrics(), metrics.NewRedisMetrics(), metrics.NewAdmissionMetrics(),
		metrics.NewAuditMetrics(), metrics.NewAttributionMetrics(), metrics.NewCertificateMetrics(), metrics.NewObserverMetrics(),
		metrics.NewHAMetrics()} {
		require.NoError(t, m.Register(reg))
	}
	require.True(t, reg.names["gitopsreverser_commits_total"], "families read: %v", reg.names)
	return reg.names
}

// describing is a Registerer that keeps the names of what is registered.
type describing struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describing) Register(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc)
	go func() { c.Describe(descs); close(descs) }()
	for desc := range descs {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names[m[1]] = true
		}
	}
	return nil
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d *describing) Unregister(prometheus.Collector) bool { return false }
