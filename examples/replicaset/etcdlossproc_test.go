package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/observe/debugpage"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
)

// This file is the etcd-loss test's controller process: this test binary
// run in controller mode (lossControllerEnv), and the test's handle on it.

// lossControllerEnv, set to a JSON lossProcConfig, runs this test binary
// as a controller process of the etcd-loss test instead of the tests.
const lossControllerEnv = "CONVERGE_REPLICASET_LOSS_CONTROLLER"

// lossProcConfig is what a controller process runs on: the etcd cluster,
// its checkpoint file, the state directory of its pods, and the timings.
type lossProcConfig struct {
	Endpoints                       []string
	Checkpoint, PodsDir             string
	Heartbeat, StartAfter, Interval time.Duration
}

// The lines a controller process writes on its standard output for the
// test: its server's base URL once it serves, and each pod it starts.
const (
	servingLine = "serving "
	startedLine = "pod started "
)

// runLossController is the controller process: the demo's controller as
// process.go runs it, with its debug page on a loopback port, over the
// etcd cluster, its pods kept in the state directory so that they outlive
// it. It runs until it is killed; it returns an exit code only if the
// controller cannot start or fails.
func runLossController(env string) int {
	os.Unsetenv(lossControllerEnv) // not for the pods
	fmt.Fprintln(os.Stderr, "controller process:", serveLossController(env))
	return 1
}

func serveLossController(env string) error {
	var c lossProcConfig
	if err := json.Unmarshal([]byte(env), &c); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	sup, err := pods.OpenSupervisor(pods.SupervisorConfig{Executable: exe, StopGrace: time.Second, StateDir: c.PodsDir,
		OnEvent: func(ev pods.PodEvent) {
			if ev.Kind == pods.PodStarted {
				fmt.Printf("%s%d\n", startedLine, ev.Pod.PID)
			}
		}})
	if err != nil {
		return err
	}
	cli, err := etcdprocs.Client(c.Endpoints...)
	if err != nil {
		return err
	}
	s, err := etcdstore.New[*controller.ReplicaSet](cli, "replicasets/", etcdstore.WithWatchOpenTimeout(time.Second))
	if err != nil {
		return err
	}
	api, err := apistore.New(s, resource.Kind[controller.Spec, controller.Status]{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &rig{cfg: Config{
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		StartAfter: c.StartAfter, CheckpointInterval: c.Interval, HeartbeatInterval: c.Heartbeat,
		HTTPAddr: "127.0.0.1:0", OnServing: func(base string) { fmt.Printf("%s%s\n", servingLine, base) },
	}, say: demo.NewNarrator(os.Stderr), api: api, sup: sup, checkpoint: c.Checkpoint, fail: cancel}
	proc, err := r.start(ctx)
	if err != nil {
		return err
	}
	<-ctx.Done() // the controller failed: rig.start's fail
	return errors.Join(errors.New("the controller stopped"), proc.stop())
}

// lossProc is a controller process, as the test sees it.
type lossProc struct {
	*procs.Proc
	out       *syncbuf.Buffer // its standard output
	startedAt time.Time       // just before it was started
	base      string          // its server's base URL
}

// startController starts a controller process on the world's cluster,
// checkpoint file and state directory, and returns once it serves.
func (w *lossWorld) startController() *lossProc {
	t := w.t
	env, err := json.Marshal(lossProcConfig{Endpoints: w.cluster.Endpoints(), Checkpoint: w.checkpoint, PodsDir: w.podsDir,
		Heartbeat: lossHeartbeat, StartAfter: lossStartAfter, Interval: lossInterval})
	require.NoError(t, err)
	p := &lossProc{out: &syncbuf.Buffer{}}
	cmd := exec.Command(w.exe)
	cmd.Env = append(os.Environ(), lossControllerEnv+"="+string(env))
	cmd.Stdout, cmd.Stderr = p.out, w.logs
	// It dies with the test, if need be; its pods do not.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.startedAt = time.Now()
	p.Proc, err = procs.Start(cmd)
	require.NoError(t, err)
	w.procs = append(w.procs, p)
	require.NoError(t, poll.Until(t.Context(), lossPatience, 10*time.Millisecond, "the controller process to serve", func() (bool, error) {
		if base := p.lines(servingLine); len(base) > 0 {
			p.base = base[0]
		}
		return p.base != "", nil
	}))
	return p
}

// lines returns what follows prefix in each line of the process's output
// that starts with it.
func (p *lossProc) lines(prefix string) []string {
	var out []string
	for line := range strings.Lines(p.out.String()) {
		if rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

// started returns the pid of every pod the process started.
func (p *lossProc) started() []int {
	var pids []int
	for _, s := range p.lines(startedLine) {
		if pid, err := strconv.Atoi(s); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// lossHealth is what the test reads of a controller's Health on its debug
// page (debugpage's JSON): whether it runs from its checkpoint, of which
// revision, how old, why refused, and what it is degraded by.
type lossHealth struct {
	Active   bool
	Revision int64
	Age      time.Duration
	Refused  string
	Degraded []string
}

// health reads the controller's health from its debug page.
func (p *lossProc) health(ctx context.Context) (lossHealth, error) {
	var page struct {
		Controllers []struct {
			Degraded   []string `json:"degraded"`
			Checkpoint *struct {
				State    string `json:"state"`
				Revision int64  `json:"revision"`
				Age      string `json:"age"`
				Refused  string `json:"refused"`
			} `json:"checkpoint"`
		} `json:"controllers"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/debug/converge/?format=json&controller=replicaset", nil)
	if err != nil {
		return lossHealth{}, err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return lossHealth{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return lossHealth{}, fmt.Errorf("debug page: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return lossHealth{}, err
	}
	if len(page.Controllers) != 1 || page.Controllers[0].Checkpoint == nil {
		return lossHealth{}, errors.New("debug page: no controller with a checkpoint")
	}
	c := page.Controllers[0]
	h := lossHealth{Active: c.Checkpoint.State == debugpage.CheckpointActive, Revision: c.Checkpoint.Revision,
		Refused: c.Checkpoint.Refused, Degraded: c.Degraded}
	if c.Checkpoint.Age != "" {
		if h.Age, err = time.ParseDuration(c.Checkpoint.Age); err != nil {
			return lossHealth{}, err
		}
	}
	return h, nil
}

// waitHealth waits until the controller's health satisfies cond, within
// limit; what names the condition in the error.
func (p *lossProc) waitHealth(t *testing.T, what string, limit time.Duration, cond func(lossHealth) bool) lossHealth {
	t.Helper()
	var h lossHealth
	var last error // a process still starting does not answer yet
	err := poll.Until(t.Context(), limit, 10*time.Millisecond, what, func() (bool, error) {
		h, last = p.health(t.Context())
		return last == nil && cond(h), nil
	})
	require.NoError(t, err, "last read: %+v, %v", h, last)
	return h
}
