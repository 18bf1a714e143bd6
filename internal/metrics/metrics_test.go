package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/configbutler/gitops-reverser/internal/branch"
	"github.com/configbutler/gitops-reverser/internal/manifest"
	"github.com/configbutler/gitops-reverser/internal/watch"
)

// TestRefusalReasonsAreScrapedAsZeroFromStart: a registry scraped right
// after registration already has placement_refusals_total at 0 for every
// reason, so an alert on it works before the first refusal.
func TestRefusalReasonsAreScrapedAsZeroFromStart(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, New().Register(reg))

	families, err := reg.Gather()
	require.NoError(t, err)
	var reasons []string
	for _, family := range families {
		if family.GetName() != "gitopsreverser_placement_refusals_total" {
			continue
		}
		for _, series := range family.GetMetric() {
			require.Zero(t, series.GetCounter().GetValue())
			reasons = append(reasons, series.GetLabel()[0].GetValue())
		}
	}
	require.ElementsMatch(t, refusalReasons, reasons, "every reason is scraped, at 0, before any refusal")
}

// TestEveryFamilyHasZeroSeriesOnceItsLabelsAreKnown: once a worker has
// started (its first queue report), a stream has begun its replay and a
// target has finished one, every family is scraped, all at zero but the one
// replay, before a single event, commit, conflict or refusal.
func TestEveryFamilyHasZeroSeriesOnceItsLabelsAreKnown(t *testing.T) {
	m := New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, m.Register(reg))

	m.QueueDepth(branch.Key{ProviderNamespace: "team-a", Provider: "gitea", Branch: "main"}, 0)
	m.StreamObserver().Replay(watch.Scope{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: "team-a"})
	m.Replayed(branch.TargetKey{Namespace: "team-a", Name: "mirror"})

	for _, family := range m.families() {
		require.Positive(t, testutil.CollectAndCount(family), "a family without series is not scraped")
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, len(m.families()))
	for _, family := range families {
		for _, series := range family.GetMetric() {
			value := series.GetCounter().GetValue() + series.GetGauge().GetValue() + float64(series.GetHistogram().GetSampleCount())
			if family.GetName() == "gitopsreverser_watch_replays_total" {
				require.Equal(t, 1.0, value, "the replay that started")
				continue
			}
			require.Zero(t, value, "%s %v", family.GetName(), series.GetLabel())
		}
	}
}

// TestEveryRefusalReasonIsKnownToTheMetrics: a RefusalReason constant added
// anywhere in internal/ must be in refusalReasons, or its series would be
// missing until its first refusal.
func TestEveryRefusalReasonIsKnownToTheMetrics(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	internal := filepath.Dir(filepath.Dir(file))
	var declared []string
	require.NoError(t, filepath.WalkDir(internal, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(parsed, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok || !isRefusalReasonType(spec.Type) {
				return true
			}
			for _, value := range spec.Values {
				if lit, ok := value.(*ast.BasicLit); ok {
					reason, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					declared = append(declared, reason)
				}
			}
			return true
		})
		return nil
	}))
	require.NotEmpty(t, declared)
	for _, reason := range declared {
		require.True(t, slices.Contains(refusalReasons, reason), "refusal reason %q is not in refusalReasons", reason)
	}
}

func isRefusalReasonType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "RefusalReason"
	case *ast.SelectorExpr:
		return e.Sel.Name == "RefusalReason"
	}
	return false
}

// TestACommitCountsItsPlacementsBySource: each object a commit creates is
// counted under the ladder step that placed it, for its GitTarget.
func TestACommitCountsItsPlacementsBySource(t *testing.T) {
	m := New()
	target := branch.TargetKey{Namespace: "team-a", Name: "mirror"}
	m.Commit(branch.Key{ProviderNamespace: "team-a", Provider: "gitea", Branch: "main"}, branch.CommitStats{
		Target: target, Placements: []manifest.PlacementSource{
			manifest.PlacementCanonical, manifest.PlacementCanonical, manifest.PlacementKustomization,
		}})

	require.Equal(t, 2.0, testutil.ToFloat64(m.placements.WithLabelValues("team-a", "mirror", "canonical")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.placements.WithLabelValues("team-a", "mirror", "kustomization")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.placements.WithLabelValues("team-a", "mirror", "declared")))
}
