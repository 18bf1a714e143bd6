package gogit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnlyASmallPackIsSearchedForDeltas: a push of live changes keeps
// Git's delta window; a replay's thousands of files go without the search.
func TestOnlyASmallPackIsSearchedForDeltas(t *testing.T) {
	require.Equal(t, uint(packDeltaWindow), deltaWindow(3))
	require.Equal(t, uint(packDeltaWindow), deltaWindow(maxDeltaSearchObjects))
	require.Zero(t, deltaWindow(maxDeltaSearchObjects+1))
}
