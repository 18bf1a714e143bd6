package branch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/configbutler/gitops-reverser/forges"
)

func TestTheWindowWidensAsTheRequestBudgetRunsLow(t *testing.T) {
	window := 5 * time.Second
	for _, tc := range []struct {
		name   string
		budget forges.Budget
		known  bool
		want   time.Duration
	}{
		{"no budget reported", forges.Budget{}, false, window},
		{"plenty left", forges.Budget{Limit: 5000, Remaining: 4000}, true, window},
		{"a fifth left", forges.Budget{Limit: 5000, Remaining: 1000}, true, 10 * time.Second},
		{"a twentieth left", forges.Budget{Limit: 5000, Remaining: 250}, true, 20 * time.Second},
		{"exhausted", forges.Budget{Limit: 5000, Remaining: 0}, true, time.Minute},
		{"never beyond a minute", forges.Budget{Limit: 100, Remaining: 5}, true, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, widenedWindow(window, tc.budget, tc.known))
		})
	}
	require.Equal(t, time.Minute, widenedWindow(40*time.Second, forges.Budget{Limit: 10, Remaining: 0}, true))
	require.Equal(t, 2*time.Minute, widenedWindow(2*time.Minute, forges.Budget{Limit: 10, Remaining: 0}, true),
		"a configured window longer than the cap is kept")
}
