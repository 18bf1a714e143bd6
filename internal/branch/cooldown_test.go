package branch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPushBudgetAddsNoLatencyWhenIdleAndSpacesABurst(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := newPushBudget(2, time.Second)

	require.Zero(t, b.wait(start), "an idle remote is pushed to at once")
	b.spend(start)
	require.Zero(t, b.wait(start), "the burst allows a second commit")
	b.spend(start)
	require.Equal(t, time.Second, b.wait(start), "a third waits one interval")
	require.Equal(t, 500*time.Millisecond, b.wait(start.Add(500*time.Millisecond)))
	require.Zero(t, b.wait(start.Add(time.Second)))

	require.Zero(t, b.wait(start.Add(time.Hour)), "after a quiet hour the budget is full again")
	b.spend(start.Add(time.Hour))
	b.spend(start.Add(time.Hour))
	require.Positive(t, b.wait(start.Add(time.Hour)), "the budget never exceeds its burst")
}
