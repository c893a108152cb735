package pods

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/privatefile"
)

// TestAStateDirectoryAnotherUserMayChangeIsRefused: records planted in a
// state directory would be adopted and their pids signalled, so one of
// mode 0777, or (as root) of another user, is refused.
func TestAStateDirectoryAnotherUserMayChangeIsRefused(t *testing.T) {
	shared := t.TempDir()
	require.NoError(t, os.Chmod(shared, 0o777))
	dirs := map[string]string{"of mode 0777": shared}
	if os.Getuid() == 0 {
		theirs := t.TempDir()
		require.NoError(t, os.Chown(theirs, 65534, 65534))
		dirs["of another user"] = theirs
	}
	for name, dir := range dirs {
		s, err := OpenSupervisor(SupervisorConfig{StateDir: dir})
		if s != nil {
			s.Close()
		}
		assert.ErrorIs(t, err, privatefile.ErrUnsafe, name)
	}
}
