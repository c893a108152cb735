// Package pods runs the pods of the examples' replica sets as real
// processes: a Supervisor starts copies of the running binary in pod mode
// (PodEnv, RunPod), watches them, stops them, and reports the owner of a
// pod that ended on its own so that its replica set is reconciled.
//
// By default a supervisor's pods are its children and end with its
// process. With a state directory (SupervisorConfig.StateDir,
// OpenSupervisor) they outlive it, as a node's processes outlive its
// agent: the next supervisor on the directory adopts them (state.go).
//
// It is the world the replicaset controller acts on
// (examples/replicaset/controller), shared by the replicaset and failover
// demos; nothing in it knows about converge.
package pods

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/converge-go/converge/examples/internal/procstat"
)

// ErrSupervisorClosed is returned by Start once Close has been called.
var ErrSupervisorClosed = errors.New("pods: supervisor closed")

// Pod is one running process of a replica set.
type Pod struct {
	// Owner is the key of the replica set the pod belongs to.
	Owner string
	// PID is the process id; the pod is also the leader of its own process
	// group, so anything it starts is stopped with it.
	PID int
	// Started is when the process was started.
	Started time.Time
}

// EventKind says what happened to a pod.
type EventKind int

// The kinds of PodEvent.
const (
	// PodStarted: the supervisor started the pod.
	PodStarted EventKind = iota + 1
	// PodStopped: the pod ended after Stop or Close asked it to.
	PodStopped
	// PodExited: the pod ended on its own or by a signal from outside.
	PodExited
	// PodAdopted: the supervisor adopted the pod, which a supervisor
	// before it on its state directory started (OpenSupervisor).
	PodAdopted
)

// PodEvent is a change of the world the supervisor saw.
type PodEvent struct {
	Kind EventKind
	Pod  Pod
	// Running is how many pods of the owner run after the event.
	Running int
	// Exit is the exit status of an ended pod ("signal: killed"), or
	// ExitUnknown for an adopted one.
	Exit string
}

// Stats counts the supervisor's pods: started, adopted (OpenSupervisor),
// stopped on request, exited on their own; and the stale files
// OpenSupervisor found and dropped: records whose process had ended or
// whose pid another process had taken, unparsable ones, writes cut short.
type Stats struct {
	Started, Adopted, Stopped, Exited, Stale int
}

// SupervisorConfig configures a Supervisor.
type SupervisorConfig struct {
	// Executable is the binary a pod runs, in pod mode (see PodEnv).
	Executable string
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL
	// (default 2 seconds).
	StopGrace time.Duration
	// OnEvent, if set, hears every PodEvent, in order. It is called with the
	// supervisor's lock held: it must not call the supervisor.
	OnEvent func(PodEvent)
	// StateDir, if set, is a directory where the supervisor records each
	// pod it starts (owner, pid, process start time), so that its pods
	// outlive it: they are not tied to its process, and the next
	// supervisor opened on the directory adopts those still running. A
	// supervisor that dies leaves its pods running; Close still stops
	// them. Only OpenSupervisor takes it. Empty: pods end with the
	// supervisor's process.
	StateDir string
}

// Supervisor starts, watches and stops pods: child processes that re-run
// Executable in pod mode, and, with a state directory, the pods it adopted.
// It sends the owner of every pod that ends without being asked to on
// Exits, so the owner gets reconciled.
//
// A pod's process is reaped only after the supervisor has recorded its
// exit, and signals are sent only to pods not yet recorded as exited, so a
// signal can never reach a process that reused a pod's pid. An adopted pod
// is not its child: its end is learnt through a pidfd, which names that
// process and no later one, and its collection is left to its parent
// (init, or a subreaper).
type Supervisor struct {
	cfg     SupervisorConfig
	exits   chan string
	closing chan struct{}
	waiters sync.WaitGroup

	mu      sync.Mutex
	procs   map[int]*proc
	started []int
	stats   Stats
	closed  bool
	lock    *os.File // the state directory's lock, held until Close
}

// proc is a pod the supervisor has not reaped yet, or, adopted, whose end
// it has not learnt yet.
type proc struct {
	pod      Pod
	cmd      *exec.Cmd     // nil for an adopted pod
	pidfd    int           // an adopted pod's pidfd, readable once it ends
	stopping bool          // Stop or Close asked it to end
	exited   bool          // it has ended; its pid is only kept until reaped
	done     chan struct{} // closed once reaped (adopted: once ended)
}

// NewSupervisor returns a supervisor with no pods, whose pods end with
// its process. cfg.StateDir must be empty (it panics otherwise): a
// supervisor with a state directory is opened with OpenSupervisor, which
// can fail.
func NewSupervisor(cfg SupervisorConfig) *Supervisor {
	if cfg.StateDir != "" {
		panic("pods: NewSupervisor with a StateDir: use OpenSupervisor")
	}
	return newSupervisor(cfg)
}

func newSupervisor(cfg SupervisorConfig) *Supervisor {
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 2 * time.Second
	}
	return &Supervisor{
		cfg:     cfg,
		exits:   make(chan string, 64),
		closing: make(chan struct{}),
		procs:   make(map[int]*proc),
	}
}

// Exits delivers the owner of each pod that ended without Stop or Close.
func (s *Supervisor) Exits() <-chan string { return s.exits }

// Start starts a pod for owner running command (in pod mode: an empty
// command blocks until stopped).
func (s *Supervisor) Start(ctx context.Context, owner string, command []string) (Pod, error) {
	if err := ctx.Err(); err != nil {
		return Pod{}, err
	}
	cmd := exec.Command(s.cfg.Executable, command...)
	cmd.Env = append(os.Environ(), PodEnv+"=1")
	// Own process group: a terminal's Ctrl-C reaches the supervisor, not
	// the pods, and stopping a pod stops what it started. Pdeathsig ends the
	// pod if the supervising process dies without stopping it, unless a
	// state directory keeps the pod for the next supervisor.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.cfg.StateDir != "" {
		cmd.SysProcAttr.Pdeathsig = 0
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Pod{}, ErrSupervisorClosed
	}
	if err := cmd.Start(); err != nil {
		return Pod{}, err
	}
	p := &proc{pod: Pod{Owner: owner, PID: cmd.Process.Pid, Started: time.Now()}, cmd: cmd, done: make(chan struct{})}
	if err := s.record(p.pod); err != nil {
		// Unrecorded, the pod would outlive a killed supervisor unseen.
		_ = syscall.Kill(-p.pod.PID, syscall.SIGKILL)
		_ = cmd.Wait()
		return Pod{}, err
	}
	s.procs[p.pod.PID] = p
	s.started = append(s.started, p.pod.PID)
	s.stats.Started++
	s.waiters.Add(1)
	go s.wait(p)
	s.emitLocked(PodEvent{Kind: PodStarted, Pod: p.pod, Running: s.countLocked(owner)})
	return p.pod, nil
}

// wait records p's exit, reaps it and wakes its owner if nobody asked it
// to end.
func (s *Supervisor) wait(p *proc) {
	defer s.waiters.Done()
	// Learn of the exit without reaping, so the pid stays ours until the
	// exit is recorded and no signal can go to a reused pid.
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, p.pod.PID, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
			break
		}
	}
	s.mu.Lock()
	p.exited = true
	s.mu.Unlock()
	s.forget(p.pod) // while the pid is still ours

	exit := "exited"
	if err := p.cmd.Wait(); p.cmd.ProcessState != nil {
		exit = p.cmd.ProcessState.String()
	} else if err != nil {
		exit = err.Error()
	}
	s.ended(p, exit)
}

// ended records that p has ended with exit, and wakes its owner if
// nobody asked it to end.
func (s *Supervisor) ended(p *proc, exit string) {
	s.mu.Lock()
	delete(s.procs, p.pod.PID)
	kind := PodExited
	if p.stopping {
		kind = PodStopped
		s.stats.Stopped++
	} else {
		s.stats.Exited++
	}
	s.emitLocked(PodEvent{Kind: kind, Pod: p.pod, Running: s.countLocked(p.pod.Owner), Exit: exit})
	s.mu.Unlock()
	close(p.done)

	if kind == PodExited {
		select {
		case s.exits <- p.pod.Owner:
		case <-s.closing:
		}
	}
}

// Running returns owner's pods, its own and adopted, that have neither
// ended nor been asked to stop, oldest first.
func (s *Supervisor) Running(owner string) []Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pods []Pod
	for _, p := range s.procs {
		if p.pod.Owner == owner && !p.exited && !p.stopping {
			pods = append(pods, p.pod)
		}
	}
	slices.SortFunc(pods, func(a, b Pod) int { return a.Started.Compare(b.Started) })
	return pods
}

// Alive reports whether the pod with this pid has not been reaped yet.
func (s *Supervisor) Alive(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.procs[pid]
	return ok
}

// Stop asks pod to end with SIGTERM, sends SIGKILL after the grace period
// or when ctx ends, and returns once the pod is reaped. A pod that has
// already ended is not an error.
func (s *Supervisor) Stop(ctx context.Context, pod Pod) error {
	s.mu.Lock()
	p, ok := s.procs[pod.PID]
	if !ok || p.pod.Owner != pod.Owner || !p.pod.Started.Equal(pod.Started) {
		s.mu.Unlock()
		return nil
	}
	p.stopping = true
	s.signalLocked(p, syscall.SIGTERM)
	s.mu.Unlock()

	grace := time.NewTimer(s.cfg.StopGrace)
	defer grace.Stop()
	select {
	case <-p.done:
		return nil
	case <-grace.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.signalLocked(p, syscall.SIGKILL)
	s.mu.Unlock()
	<-p.done // SIGKILL cannot be caught or ignored
	return nil
}

// Signal sends sig to the pod with this pid as an outside actor would (a
// power failure, an operator): the pod's end is reported as PodExited.
// It returns false if there is no such pod, or it has already ended.
func (s *Supervisor) Signal(pid int, sig syscall.Signal) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[pid]
	if !ok || p.exited {
		return false
	}
	s.signalLocked(p, sig)
	return true
}

// signalLocked signals p's process group unless p has ended: for an
// adopted pod, unless its pidfd says so, since its parent, not this
// supervisor, reaps it and frees its pid. s.mu is held.
func (s *Supervisor) signalLocked(p *proc, sig syscall.Signal) {
	if p.exited || (p.cmd == nil && endedPidfd(p.pidfd)) {
		return
	}
	// ESRCH only means the group is already gone.
	_ = syscall.Kill(-p.pod.PID, sig)
}

// Close stops every pod, adopted ones included (SIGTERM, then SIGKILL
// after the grace period), waits until all are reaped (adopted: have
// ended), releases the state directory, and makes later Starts fail. It
// may be called more than once.
func (s *Supervisor) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	pods := make([]Pod, 0, len(s.procs))
	for _, p := range s.procs {
		pods = append(pods, p.pod)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Go(func() { _ = s.Stop(context.Background(), pod) })
	}
	wg.Wait()
	s.waiters.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock != nil {
		_ = s.lock.Close() // releases the directory's flock
		s.lock = nil
	}
}

// Started returns the pid of every pod ever started or adopted, in that
// order.
func (s *Supervisor) Started() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.started)
}

// Stats returns the supervisor's counts so far.
func (s *Supervisor) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Leftovers returns the pids of pods ever started or adopted whose
// process, or a process of whose process group, still runs. After Close it
// should be empty.
func (s *Supervisor) Leftovers() []int { return Survivors(s.Started()) }

// Survivors returns the pids among pids whose process, or a process of
// whose process group, still runs. A process that has ended but is not
// collected yet (a zombie: an orphan waits for init, in its own time) does
// not: it runs nothing and holds nothing but its pid.
func Survivors(pids []int) []int {
	var alive []int
	for _, pid := range pids {
		if runs(pid) || groupRuns(pid) {
			alive = append(alive, pid)
		}
	}
	return alive
}

// runs reports whether process pid exists and has not ended.
func runs(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	if st, ok := procstat.Read(pid); ok {
		return !st.Ended()
	}
	// Unreadable: gone since, or /proc hidden; only the former is gone.
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// groupRuns reports whether a process of process group pgid has not
// ended; if the process table cannot be read, whether the group exists.
func groupRuns(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	members, err := procstat.Group(pgid)
	return err != nil || len(members) > 0
}

// countLocked counts owner's pods that have not ended. s.mu is held.
func (s *Supervisor) countLocked(owner string) int {
	n := 0
	for _, p := range s.procs {
		if p.pod.Owner == owner && !p.exited && !p.stopping {
			n++
		}
	}
	return n
}

// emitLocked reports ev to OnEvent. s.mu is held.
func (s *Supervisor) emitLocked(ev PodEvent) {
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(ev)
	}
}
