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

	"github.com/configbutler/gitops-reverser/api/v1alpha3"
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

// The planner (manifest.RefusalReason) and the branch worker
// (branch.RequestReason) cannot import api/v1alpha3 (the planner imports
// nothing from Kubernetes; the API pulls controller-runtime below the
// engine), so they report the API's reason words in types of their own, and
// status, events and these metrics carry them as they are. The API owns
// the words; this test pins every value declared in internal/ to one.

// TestEveryRefusalReasonIsTheAPIsAndKnownToTheMetrics: a RefusalReason
// constant added anywhere in internal/ must be an API refusal reason in
// refusalReasons, or its series would be missing until its first refusal
// and status would carry a reason the API does not define.
func TestEveryRefusalReasonIsTheAPIsAndKnownToTheMetrics(t *testing.T) {
	declared := reasonLiterals(t, "RefusalReason")
	require.NotEmpty(t, declared)
	for name, reason := range declared {
		require.True(t, slices.Contains(refusalReasons, reason), "refusal reason %s = %q is not one of the API's in refusalReasons", name, reason)
	}
}

// TestEveryRequestReasonIsTheAPIs: a CommitRequest's Ready reason is the
// worker's RequestReason as it is, so each must be an API reason.
func TestEveryRequestReasonIsTheAPIs(t *testing.T) {
	api := []string{v1alpha3.ReasonCommitted, v1alpha3.ReasonNoWindowInGrace, v1alpha3.ReasonWindowMismatch,
		v1alpha3.ReasonAlreadyPresent, v1alpha3.ReasonFinalizeFailed}
	declared := reasonLiterals(t, "RequestReason")
	require.Len(t, declared, len(api), "one API reason per request outcome")
	for name, reason := range declared {
		require.True(t, slices.Contains(api, reason), "request reason %s = %q is not a CommitRequest reason of the API", name, reason)
	}
}

// reasonLiterals returns the string constants of type typeName (or
// pkg.typeName) declared in internal/, outside tests, by name.
func reasonLiterals(t *testing.T, typeName string) map[string]string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	internal := filepath.Dir(filepath.Dir(file))
	declared := map[string]string{}
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
			if !ok || !isType(spec.Type, typeName) {
				return true
			}
			for i, value := range spec.Values {
				lit, ok := value.(*ast.BasicLit)
				require.True(t, ok && lit.Kind == token.STRING, "%s in %s is not a string literal", spec.Names[i].Name, path)
				reason, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				declared[spec.Names[i].Name] = reason
			}
			return true
		})
		return nil
	}))
	return declared
}

func isType(e ast.Expr, name string) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == name
	case *ast.SelectorExpr:
		return e.Sel.Name == name
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
