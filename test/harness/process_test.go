package harness

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreePortIsBelowTheEphemeralRangeAndBindable: the kernel never hands
// out the port to a connection by itself, and the caller can listen on it.
func TestFreePortIsBelowTheEphemeralRangeAndBindable(t *testing.T) {
	low, err := ephemeralLow()
	if err != nil || low <= freePortFloor+1000 {
		t.Skipf("no room below this machine's ephemeral range (%d, %v)", low, err)
	}
	for range 20 {
		port, err := FreePort()
		require.NoError(t, err)
		require.GreaterOrEqual(t, port, freePortFloor)
		require.Less(t, port, low, "inside the ephemeral range")
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
}
