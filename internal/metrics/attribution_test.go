package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/attribution"
	"github.com/configbutler/gitops-reverser/internal/facts"
)

// TestAttributionFamiliesCountWhatTheirObserverIsTold: the families
// register on a pedantic registry and each observer call lands in its
// family with the spec's labels.
func TestAttributionFamiliesCountWhatTheirObserverIsTold(t *testing.T) {
	m := NewAttributionMetrics()
	require.NoError(t, m.Register(prometheus.NewPedanticRegistry()))
	require.Zero(t, testutil.ToFloat64(m.evictions.WithLabelValues("type_cap")), "eviction reasons start at zero")

	stream := facts.StreamKey{Route: "prod", Group: "apps", Resource: "deployments"}
	m.FactsWritten(3)
	m.IndexEntries(2)
	m.Evicted(attribution.EvictedTypeCap)
	m.Resolved(attribution.Query{Stream: stream, Version: "v1", Removal: true},
		attribution.Resolution{Tier: attribution.TierDeleteSticky, Actor: facts.Actor{Username: "system:serviceaccount:a:b"},
			Waited: time.Second})
	m.Resolved(attribution.Query{Stream: stream, Version: "v1"}, attribution.Resolution{Tier: attribution.TierAbsent})
	m.StreamGap(stream, 0)
	m.FollowerError("memory", stream, nil)
	m.FollowerLag("redis", 2*time.Second)
	m.DecodeError(nil)

	require.Equal(t, 3.0, testutil.ToFloat64(m.factOps.WithLabelValues("written")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.factOps.WithLabelValues("matched")))
	require.Equal(t, 2.0, testutil.ToFloat64(m.entries))
	require.Equal(t, 1.0, testutil.ToFloat64(m.evictions.WithLabelValues("type_cap")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.resolutions.WithLabelValues("delete_sticky", "serviceaccount", "apps", "v1", "deployments")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.resolutions.WithLabelValues("absent", "none", "apps", "v1", "deployments")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.gaps.WithLabelValues("prod/deployments.apps")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.followerErrs.WithLabelValues("memory")))
	require.Equal(t, 1, testutil.CollectAndCount(m.followerLag), "one transport's lag")
	require.Equal(t, 1.0, testutil.ToFloat64(m.decodeErrs))
	require.Equal(t, 2*len(attribution.Tiers), testutil.CollectAndCount(m.wait), "every tier × event kind has a series")
}
