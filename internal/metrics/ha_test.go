package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/internal/ha"
)

func TestHAFamiliesCountWhatTheirObserverIsTold(t *testing.T) {
	m := NewHAMetrics()
	require.NoError(t, m.Register(prometheus.NewPedanticRegistry()))
	require.Equal(t, len(ha.Causes()), testutil.CollectAndCount(m.handovers), "every cause starts at zero")

	m.Members(3)
	m.Owned(167)
	m.Handover(ha.CauseMemberLost)
	m.Handover(ha.CauseMemberLost)
	m.Handover(ha.CauseGraceful)
	m.Failover(16 * time.Second)

	require.Equal(t, 3.0, testutil.ToFloat64(m.members))
	require.Equal(t, 167.0, testutil.ToFloat64(m.owned))
	require.Equal(t, 2.0, testutil.ToFloat64(m.handovers.WithLabelValues("member_lost")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.handovers.WithLabelValues("graceful")))
	require.Zero(t, testutil.ToFloat64(m.handovers.WithLabelValues("redis_lost")))
	require.Equal(t, 1, testutil.CollectAndCount(m.failover))

	require.Zero(t, testutil.ToFloat64(m.outage))
	m.StoreOutage(true)
	require.Equal(t, 1.0, testutil.ToFloat64(m.outage))
	m.StoreOutage(false)
	require.Zero(t, testutil.ToFloat64(m.outage))
}
