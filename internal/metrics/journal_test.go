package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/branch"
)

func TestJournalMetricsReportEachOwnedBranchUntilItIsGone(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewJournalMetrics()
	require.NoError(t, m.Register(reg))
	main := branch.Key{ProviderNamespace: "team", Provider: "github", Branch: "main"}
	docs := branch.Key{ProviderNamespace: "team", Provider: "github", Branch: "docs"}

	m.JournalDepth(main, 50, 1500*time.Millisecond)
	m.JournalDepth(docs, 0, 0)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP gitopsreverser_journal_age_seconds How long the oldest journal entry of a branch has waited for its commit (0 when none waits); a growing age is a window that cannot be committed.
# TYPE gitopsreverser_journal_age_seconds gauge
gitopsreverser_journal_age_seconds{branch="docs",provider="github",provider_namespace="team"} 0
gitopsreverser_journal_age_seconds{branch="main",provider="github",provider_namespace="team"} 1.5
# HELP gitopsreverser_journal_depth Journal entries (accepted writes, sweeps and markers) of a branch waiting for their commit, as its owner last read them.
# TYPE gitopsreverser_journal_depth gauge
gitopsreverser_journal_depth{branch="docs",provider="github",provider_namespace="team"} 0
gitopsreverser_journal_depth{branch="main",provider="github",provider_namespace="team"} 50
`)))

	m.JournalGone(main)
	require.Equal(t, 1, testutil.CollectAndCount(m.depth))
	require.Equal(t, 1, testutil.CollectAndCount(m.age))
}
