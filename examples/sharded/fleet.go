package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/examples/internal/procstat"
)

// fleet starts and signals the replica processes of one run: copies of
// this program in replica mode (replicaEnv), sharing etcd and the record
// file. The parent's own records (kills, pauses, leaves) go to the same
// file, after the signal has taken effect.
type fleet struct {
	exe  string
	dir  string // stderr of each replica
	base replicaConfig
	rec  *recorder

	closeRec sync.Once
	mu       sync.Mutex
	procs    map[string]*proc
}

// proc is one replica process.
type proc struct {
	*procs.Proc
	id     string
	stderr string
}

// newFleet returns a fleet running exe; base is every replica's
// configuration but its ID.
func newFleet(exe, dir string, base replicaConfig) (*fleet, error) {
	rec, err := openRecorder(base.record, "parent")
	if err != nil {
		return nil, err
	}
	return &fleet{exe: exe, dir: dir, base: base, rec: rec, procs: map[string]*proc{}}, nil
}

// start starts replica id.
func (f *fleet) start(id string) error {
	cfg := f.base
	cfg.id = id
	stderrPath := filepath.Join(f.dir, id+".stderr")
	out, err := os.OpenFile(stderrPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(f.exe, cfg.args()...)
	// A replica built with the race detector sleeps a second at exit
	// unless told not to.
	cmd.Env = append(os.Environ(), replicaEnv+"=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stdout, cmd.Stderr = out, out
	// Killed with this program, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started, err := procs.Start(cmd)
	if err != nil {
		return fmt.Errorf("start replica %s: %w", id, err)
	}
	p := &proc{Proc: started, id: id, stderr: stderrPath}
	f.mu.Lock()
	f.procs[id] = p
	f.mu.Unlock()
	return nil
}

func (f *fleet) proc(id string) (*proc, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.procs[id]
	if !ok {
		return nil, fmt.Errorf("no replica %s", id)
	}
	return p, nil
}

// pid returns replica id's process ID (0 if unknown).
func (f *fleet) pid(id string) int {
	if p, err := f.proc(id); err == nil {
		return p.Pid()
	}
	return 0
}

// kill kills replica id with SIGKILL and records it once it has exited.
func (f *fleet) kill(id string) error {
	p, err := f.proc(id)
	if err != nil {
		return err
	}
	p.Kill()
	f.rec.put(kindKill, id, 0, 0, "")
	return nil
}

// freeze stops replica id with SIGSTOP and records it once the kernel
// shows it stopped.
func (f *fleet) freeze(id string) error {
	p, err := f.proc(id)
	if err != nil {
		return err
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for !stopped(p.Pid()) {
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s not stopped 5s after SIGSTOP", id)
		}
		<-tick.C
	}
	f.rec.put(kindStop, id, 0, 0, "")
	return nil
}

// stopped reports whether process pid is stopped (state T in /proc).
func stopped(pid int) bool {
	st, ok := procstat.Read(pid)
	return ok && st.State == 'T'
}

// thaw resumes replica id after freeze, recording it first.
func (f *fleet) thaw(id string) error {
	p, err := f.proc(id)
	if err != nil {
		return err
	}
	f.rec.put(kindCont, id, 0, 0, "")
	return p.Signal(syscall.SIGCONT)
}

// signal sends sig to replica id.
func (f *fleet) signal(id string, sig syscall.Signal) error {
	p, err := f.proc(id)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}

// leave asks replica id to leave (SIGTERM), records it, and waits up to
// limit for it to exit.
func (f *fleet) leave(id string, limit time.Duration) error {
	p, err := f.proc(id)
	if err != nil {
		return err
	}
	f.rec.put(kindLeave, id, 0, 0, "")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			return fmt.Errorf("replica %s: %v: %s", id, err, f.tail(p))
		}
		return nil
	case <-t.C:
		return fmt.Errorf("replica %s did not leave within %v of SIGTERM", id, limit)
	}
}

// tail returns the end of p's stderr.
func (f *fleet) tail(p *proc) string {
	b, _ := os.ReadFile(p.stderr)
	return string(b[max(0, len(b)-2000):])
}

// running returns the replicas whose processes have not exited.
func (f *fleet) running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id, p := range f.procs {
		select {
		case <-p.Done():
		default:
			ids = append(ids, id)
		}
	}
	return ids
}

// close makes every replica still running leave (a frozen one is resumed
// first), kills those that do not within limit, and returns the errors.
func (f *fleet) close(limit time.Duration) error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, id := range f.running() {
		p, _ := f.proc(id)
		_ = p.Signal(syscall.SIGCONT)
		wg.Go(func() {
			if err := f.leave(id, limit); err != nil {
				p.Kill()
				f.rec.put(kindKill, id, 0, 0, "")
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	f.closeRec.Do(func() { errs = append(errs, f.rec.close()) })
	return errors.Join(errs...)
}

// cpu returns the CPU time the running replicas have used (procstat).
func (f *fleet) cpu() time.Duration {
	var total time.Duration
	for _, id := range f.running() {
		if st, ok := procstat.Read(f.pid(id)); ok {
			total += time.Duration(st.CPUTicks) * procstat.TickDuration
		}
	}
	return total
}
