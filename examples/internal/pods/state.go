package pods

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/converge-go/converge/examples/internal/procstat"
	"github.com/converge-go/converge/internal/privatefile"
)

// This file is the state directory (SupervisorConfig.StateDir): a record
// of each pod, written once it is started and removed once it has ended,
// and the adoption of the recorded pods by the next supervisor.

// ErrStateDirInUse is returned by OpenSupervisor when another supervisor,
// in this process or another, keeps the state directory.
var ErrStateDirInUse = errors.New("pods: state directory in use by another supervisor")

// ExitUnknown is PodEvent.Exit for an adopted pod that ended: it is not
// the supervisor's child, so its exit status goes to its parent.
const ExitUnknown = "ended (adopted: exit status unknown)"

// The state directory's files: <pid>.pod records, written to <pid>.pod.tmp
// first, and the lock its supervisor holds.
const (
	recordExt = ".pod"
	tmpExt    = ".tmp"
	lockName  = "lock"
)

// record is a pod's file in the state directory. The pid and the start
// time name its process: a later process with the same pid has another
// start time.
type record struct {
	Owner      string    `json:"owner"`
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"startTicks"`
	Started    time.Time `json:"started"`
}

// entry is a file of the state directory: a record (ok), or something
// that is not one (an unparsable record, a write cut short).
type entry struct {
	path string
	rec  record
	ok   bool
}

// OpenSupervisor returns a supervisor that keeps its pods' records in
// cfg.StateDir (created if need be) and has adopted every recorded pod
// still running: adopted pods are Running, Stoppable and Signalable, and
// reported on Exits when they end, as its own. A record whose process has
// ended, or whose pid another process now has (its start time differs), is
// stale: it is dropped and counted (Stats.Stale), and no signal ever goes
// to that pid. A state directory another user may change (of another user
// than this process's and root, or writable by group or others) is refused
// with an error matching privatefile.ErrUnsafe; a missing one is made with
// mode 0700. One supervisor at a time keeps a directory (an flock, which
// a killed process releases): another gets ErrStateDirInUse. With
// cfg.StateDir empty it is NewSupervisor.
//
// A pod started in the instant before its supervisor is killed, before
// its record is written, is not adopted. Records are not synced: a machine
// that stops takes its pods with it.
func OpenSupervisor(cfg SupervisorConfig) (*Supervisor, error) {
	if cfg.StateDir == "" {
		return NewSupervisor(cfg), nil
	}
	// Records planted there would be adopted, and their pids signalled.
	if err := privatefile.Dir(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("pods: state directory: %w", err)
	}
	lock, err := lockDir(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	entries, err := readDir(cfg.StateDir)
	if err != nil {
		return nil, errors.Join(err, lock.Close())
	}
	fds := make([]int, len(entries))
	for i, e := range entries {
		if fds[i], err = pidfdOf(e); err != nil {
			for _, fd := range fds[:i] {
				closePidfd(fd)
			}
			return nil, errors.Join(err, lock.Close())
		}
	}
	s := newSupervisor(cfg)
	s.lock = lock
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range entries {
		if fds[i] < 0 {
			s.stats.Stale++
			_ = os.Remove(e.path) // a later supervisor finds it stale too
			continue
		}
		s.adoptLocked(e.rec, fds[i])
	}
	return s, nil
}

// lockDir takes the state directory's lock.
func lockDir(dir string) (*os.File, error) {
	// Opened close-on-exec: pods do not inherit the lock.
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pods: state directory: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrStateDirInUse, dir)
		}
		return nil, fmt.Errorf("pods: lock the state directory: %w", err)
	}
	return f, nil
}

// pidfdOf returns a pidfd of e's process if it still runs, -1 if e is
// stale, or an error if that cannot be told.
func pidfdOf(e entry) (int, error) {
	if !e.ok || !procstat.Alive(e.rec.PID, e.rec.StartTicks) {
		return -1, nil
	}
	fd, err := unix.PidfdOpen(e.rec.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("pods: adopt pod %d: %w", e.rec.PID, err)
	}
	// The pidfd names whichever process had the pid when it was opened:
	// the recorded one only if it still runs now.
	if !procstat.Alive(e.rec.PID, e.rec.StartTicks) {
		closePidfd(fd)
		return -1, nil
	}
	return fd, nil
}

// adoptLocked makes the pod of rec, whose process fd names, one of the
// supervisor's. s.mu is held.
func (s *Supervisor) adoptLocked(rec record, fd int) {
	p := &proc{pod: Pod{Owner: rec.Owner, PID: rec.PID, Started: rec.Started}, pidfd: fd, done: make(chan struct{})}
	s.procs[p.pod.PID] = p
	s.started = append(s.started, p.pod.PID)
	s.stats.Adopted++
	s.waiters.Add(1)
	go s.watch(p, rec.StartTicks)
	s.emitLocked(PodEvent{Kind: PodAdopted, Pod: p.pod, Running: s.countLocked(p.pod.Owner)})
}

// watch waits until the adopted pod p, started at ticks, has ended, then
// records it as wait does for a child.
func (s *Supervisor) watch(p *proc, ticks uint64) {
	defer s.waiters.Done()
	fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if n > 0 {
			break
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			// Not expected of one valid descriptor: ask the table instead.
			for procstat.Alive(p.pod.PID, ticks) {
				time.Sleep(50 * time.Millisecond)
			}
			break
		}
	}
	s.mu.Lock()
	p.exited = true
	s.mu.Unlock()
	s.forget(p.pod)
	closePidfd(p.pidfd) // no signal uses it once exited is set
	s.ended(p, ExitUnknown)
}

// endedPidfd reports whether the process fd names has ended.
func endedPidfd(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return n > 0 || (err != nil && !errors.Is(err, unix.EINTR))
}

func closePidfd(fd int) { _ = unix.Close(fd) }

// record writes pod's record if the supervisor has a state directory: to
// a temporary file renamed into place, so that a record is whole or
// absent. s.mu is held and the pod is not reaped yet.
func (s *Supervisor) record(pod Pod) error {
	if s.cfg.StateDir == "" {
		return nil
	}
	st, ok := procstat.Read(pod.PID)
	if !ok {
		return fmt.Errorf("pods: record pod %d: not in the process table", pod.PID)
	}
	b, err := json.Marshal(record{Owner: pod.Owner, PID: pod.PID, StartTicks: st.StartTicks, Started: pod.Started})
	if err != nil {
		return fmt.Errorf("pods: record pod %d: %w", pod.PID, err)
	}
	path := recordPath(s.cfg.StateDir, pod.PID)
	if err := os.WriteFile(path+tmpExt, b, 0o600); err != nil {
		return fmt.Errorf("pods: record pod %d: %w", pod.PID, err)
	}
	if err := os.Rename(path+tmpExt, path); err != nil {
		_ = os.Remove(path + tmpExt)
		return fmt.Errorf("pods: record pod %d: %w", pod.PID, err)
	}
	return nil
}

// forget removes pod's record, once it has ended. A record left behind
// (the supervisor killed meanwhile) is stale to the next supervisor.
func (s *Supervisor) forget(pod Pod) {
	if s.cfg.StateDir != "" {
		_ = os.Remove(recordPath(s.cfg.StateDir, pod.PID))
	}
}

func recordPath(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("%d%s", pid, recordExt))
}

// readDir returns the records of dir, and the files that should have been
// records but are not (unparsable, or writes cut short), in name order.
// Files removed as it reads are skipped.
func readDir(dir string) ([]entry, error) {
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pods: state directory: %w", err)
	}
	var entries []entry
	for _, f := range files {
		e := entry{path: filepath.Join(dir, f.Name())}
		switch {
		case strings.HasSuffix(f.Name(), tmpExt):
		case strings.HasSuffix(f.Name(), recordExt):
			b, err := os.ReadFile(e.path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("pods: state directory: %w", err)
			}
			e.ok = json.Unmarshal(b, &e.rec) == nil && e.rec.PID > 0
		default:
			continue
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// Recorded returns the pods recorded in the state directory dir whose
// process still runs, oldest first: the pods of the supervisor that keeps
// dir (those it is stopping included), or, with none, of the last one,
// seen from any process. It only reads: no lock, no change to dir.
func Recorded(dir string) ([]Pod, error) {
	entries, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	var pods []Pod
	for _, e := range entries {
		if e.ok && procstat.Alive(e.rec.PID, e.rec.StartTicks) {
			pods = append(pods, Pod{Owner: e.rec.Owner, PID: e.rec.PID, Started: e.rec.Started})
		}
	}
	slices.SortFunc(pods, func(a, b Pod) int { return a.Started.Compare(b.Started) })
	return pods, nil
}
