// Package pods runs the pods of the examples' replica sets as real
// processes: a Supervisor starts copies of the running binary in pod mode
// (PodEnv, RunPod), watches them, stops them, and reports the owner of a
// pod that ended on its own so that its replica set is reconciled.
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
)

// PodEvent is a change of the world the supervisor saw.
type PodEvent struct {
	Kind EventKind
	Pod  Pod
	// Running is how many pods of the owner run after the event.
	Running int
	// Exit is the exit status of an ended pod ("signal: killed").
	Exit string
}

// Stats counts the supervisor's pods.
type Stats struct {
	Started, Stopped, Exited int
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
}

// Supervisor starts, watches and stops pods: child processes that re-run
// Executable in pod mode. It sends the owner of every pod that ends without
// being asked to on Exits, so the owner gets reconciled.
//
// A pod's process is reaped only after the supervisor has recorded its
// exit, and signals are sent only to pods not yet recorded as exited, so a
// signal can never reach a process that reused a pod's pid.
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
}

// proc is a pod the supervisor has not reaped yet.
type proc struct {
	pod      Pod
	cmd      *exec.Cmd
	stopping bool          // Stop or Close asked it to end
	exited   bool          // it has ended; its pid is only kept until reaped
	done     chan struct{} // closed once reaped
}

// NewSupervisor returns a supervisor with no pods.
func NewSupervisor(cfg SupervisorConfig) *Supervisor {
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
	// pod if the supervising process dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Pod{}, ErrSupervisorClosed
	}
	if err := cmd.Start(); err != nil {
		return Pod{}, err
	}
	p := &proc{pod: Pod{Owner: owner, PID: cmd.Process.Pid, Started: time.Now()}, cmd: cmd, done: make(chan struct{})}
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

	exit := "exited"
	if err := p.cmd.Wait(); p.cmd.ProcessState != nil {
		exit = p.cmd.ProcessState.String()
	} else if err != nil {
		exit = err.Error()
	}

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

// Running returns owner's pods that have neither ended nor been asked to
// stop, oldest first.
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

// signalLocked signals p's process group unless p has exited. s.mu is held.
func (s *Supervisor) signalLocked(p *proc, sig syscall.Signal) {
	if !p.exited {
		// ESRCH only means the group is already gone.
		_ = syscall.Kill(-p.pod.PID, sig)
	}
}

// Close stops every pod (SIGTERM, then SIGKILL after the grace period),
// waits until all are reaped, and makes later Starts fail. It may be called
// more than once.
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
}

// Started returns the pid of every pod ever started, in start order.
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

// Leftovers returns the pids of pods ever started whose process, or
// process group, still exists. After Close it should be empty.
func (s *Supervisor) Leftovers() []int { return Survivors(s.Started()) }

// Survivors returns the pids among pids whose process or process group
// still exists.
func Survivors(pids []int) []int {
	var alive []int
	for _, pid := range pids {
		if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || !errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH) {
			alive = append(alive, pid)
		}
	}
	return alive
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
