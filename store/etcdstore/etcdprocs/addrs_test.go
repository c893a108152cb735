package etcdprocs

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreeAddrsAreDistinctBindableAndOutsideTheEphemeralRange: the ports
// are distinct, below the range the kernel hands out on its own (so no
// port-0 listener or outgoing connection takes one), and bindable.
func TestFreeAddrsAreDistinctBindableAndOutsideTheEphemeralRange(t *testing.T) {
	addrs, err := FreeAddrs(20)
	require.NoError(t, err)
	require.Len(t, addrs, 20)
	seen := map[string]bool{}
	low := ephemeralLow()
	for _, a := range addrs {
		require.False(t, seen[a], "repeated %s", a)
		seen[a] = true
		_, port, err := net.SplitHostPort(a)
		require.NoError(t, err)
		p, err := strconv.Atoi(port)
		require.NoError(t, err)
		require.GreaterOrEqual(t, p, lowestPort)
		if low > lowestPort {
			require.Less(t, p, low)
		}
		l, err := net.Listen("tcp", a)
		require.NoError(t, err, "returned port must be free")
		require.NoError(t, l.Close())
	}
}
