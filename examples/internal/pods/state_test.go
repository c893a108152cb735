package pods

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/examples/internal/procstat"
)

// startPodProcess starts this test binary as a pod running command, in a
// process group of its own, not under a supervisor. Cleanup kills it.
func startPodProcess(t *testing.T, command ...string) *exec.Cmd {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, command...)
	cmd.Env = append(os.Environ(), PodEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func writeRecord(t *testing.T, dir string, rec record) {
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(recordPath(dir, rec.PID), b, 0o600))
}

// TestStaleRecordsAreDroppedAndTheirPidsNeverSignalled opens a supervisor
// on records no pod stands behind: a pid another process took since (it
// runs, with another start time), a pid whose process has ended but is
// not reaped yet (a zombie), a pid gone, an unparsable record and a write
// cut short. It adopts none, drops them all, and the process that took
// a pid, in a process group of its own, is not signalled by Close.
func TestStaleRecordsAreDroppedAndTheirPidsNeverSignalled(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()

	reused := startPodProcess(t)
	st, ok := procstat.Read(reused.Process.Pid)
	require.True(t, ok)
	writeRecord(t, dir, record{Owner: "web", PID: reused.Process.Pid, StartTicks: st.StartTicks + 1, Started: now})

	zombie := startPodProcess(t, "true")
	require.NoError(t, poll.Until(t.Context(), 20*time.Second, 10*time.Millisecond, "the pod to end", func() (bool, error) {
		st, ok := procstat.Read(zombie.Process.Pid)
		return ok && st.Ended(), nil
	}))
	zst, _ := procstat.Read(zombie.Process.Pid)
	writeRecord(t, dir, record{Owner: "web", PID: zombie.Process.Pid, StartTicks: zst.StartTicks, Started: now})

	gone := startPodProcess(t, "true")
	require.NoError(t, gone.Wait())
	writeRecord(t, dir, record{Owner: "web", PID: gone.Process.Pid, StartTicks: 1, Started: now})

	require.NoError(t, os.WriteFile(filepath.Join(dir, "1"+recordExt), []byte("{"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "2"+recordExt+tmpExt), []byte(`{"owner":`), 0o600))

	s, err := OpenSupervisor(SupervisorConfig{StateDir: dir})
	require.NoError(t, err)
	assert.Equal(t, Stats{Stale: 5}, s.Stats())
	assert.Empty(t, s.Running("web"))
	assert.False(t, s.Alive(reused.Process.Pid))
	assert.False(t, s.Signal(reused.Process.Pid, syscall.SIGKILL))
	s.Close()

	assert.True(t, procstat.Alive(reused.Process.Pid, st.StartTicks), "the process that took a recorded pid")
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Equal(t, lockName, files[0].Name(), "all that is left")
	recorded, err := Recorded(dir)
	require.NoError(t, err)
	assert.Empty(t, recorded)
}
