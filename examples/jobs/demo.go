package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/examples/internal/procstat"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store/httpstore"
)

// DemoConfig configures runDemo.
type DemoConfig struct {
	Out io.Writer
	// Executable is this program (default os.Executable()), started as the
	// daemon; Env is added to its environment.
	Executable string
	Env        []string
	// Dir keeps the daemon's directory (default: a temporary one, removed).
	Dir string
}

// demoJobs are the jobs of the demo: what a user would add with
// "jobs add". The flaky one counts its runs in a file of the demo's
// directory.
func demoJobs(dir string) map[string]Spec {
	counter := filepath.Join(dir, "flaky.count")
	return map[string]Spec{
		"hello":  {Command: "echo", Args: []string{"hello"}},
		"backup": {Command: "sh", Args: []string{"-c", "sleep 3; echo backed up"}},
		"flaky": {Command: "sh", Args: []string{"-c", `n=$(cat "$0" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$0"; [ $n -ge 3 ]`, counter},
			Retries: 3},
		"broken": {Command: "sh", Args: []string{"-c", "exit 3"}, Retries: 1},
		"stuck":  {Command: "sleep", Args: []string{"60"}, Timeout: Duration(time.Second)},
	}
}

// runDemo runs the narrated demo: a daemon in a directory of its own runs
// five jobs, is killed with SIGKILL while one of them runs, and is
// restarted; the new daemon adopts the running attempt instead of starting
// it again. The demo ends with a graceful shutdown and checks that no
// process is left.
func runDemo(ctx context.Context, cfg DemoConfig) (err error) {
	if cfg.Executable == "" {
		if cfg.Executable, err = os.Executable(); err != nil {
			return err
		}
	}
	if cfg.Dir == "" {
		if cfg.Dir, err = os.MkdirTemp("", "jobs-demo"); err != nil {
			return err
		}
		defer os.RemoveAll(cfg.Dir)
	}
	dm := &demoRun{cfg: cfg, say: newNarrator(cfg.Out), jobs: demoJobs(cfg.Dir)}
	d, err := dm.start(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if d != nil {
			d.Kill()
		}
	}()
	// The daemon generated its token into its directory; the demo reads it
	// from there, as "jobs" does.
	if dm.token, _, err = readTokenFile(filepath.Join(cfg.Dir, TokenFile)); err != nil {
		return err
	}
	watch := dm.say.follow(ctx, d.url, dm.token, 0)
	if err := dm.addJobs(ctx, d.url); err != nil {
		return err
	}
	if d, watch, err = dm.crash(ctx, d, watch); err != nil {
		return err
	}
	err = dm.end(ctx, d, watch)
	d = nil // stopped by end
	return err
}

// demoRun is the state of one narrated demo.
type demoRun struct {
	cfg   DemoConfig
	say   *narrator
	logs  syncbuf.Buffer
	jobs  map[string]Spec
	token string
}

// start starts a daemon in the demo's directory. It generates its token
// there whatever $JOBS_TOKEN says.
func (dm *demoRun) start(ctx context.Context) (*daemonProc, error) {
	env := append([]string{"JOBS_TOKEN="}, dm.cfg.Env...)
	args := []string{"-workers", "3", "-backoff", "500ms", "-grace", "1s"}
	d, err := startDaemon(ctx, dm.cfg.Executable, env, dm.cfg.Dir, &dm.logs, time.Minute, args...)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, dm.logs.String())
	}
	dm.say.Say("daemon %d serves the jobs store at %s (3 workers)", d.Pid(), d.url)
	return d, nil
}

// addJobs adds the demo's jobs through the store at url.
func (dm *demoRun) addJobs(ctx context.Context, url string) error {
	c, err := httpstore.New[*Job](url, httpstore.WithToken(dm.token))
	if err != nil {
		return err
	}
	defer c.Close()
	for _, name := range []string{"hello", "backup", "flaky", "broken", "stuck"} {
		if _, _, err := addJob(ctx, c, name, dm.jobs[name]); err != nil {
			return err
		}
	}
	return nil
}

// crash kills daemon d with SIGKILL while backup runs, and starts the next
// one, which adopts backup's attempt. It returns the new daemon and the
// watch that narrates it.
func (dm *demoRun) crash(ctx context.Context, d *daemonProc, watch *following) (*daemonProc, *following, error) {
	var backup *Job
	err := poll.Until(ctx, time.Minute, 20*time.Millisecond, "backup running", func() (bool, error) {
		for name := range dm.jobs {
			if dm.say.last(name) == nil {
				return false, nil
			}
		}
		backup = dm.say.last("backup")
		return backup.Status.Phase == Running, nil
	})
	if err != nil {
		return d, watch, err
	}
	d.Kill()
	rev := watch.stop()
	pid := backup.Status.PID
	dm.say.Say("── SIGKILL: daemon %d is gone; backup's attempt (pid %d) runs on: %v", d.Pid(), pid, procstat.Alive(pid, backup.Status.StartTicks))
	if d, err = dm.start(ctx); err != nil {
		return nil, nil, err
	}
	dm.say.Say("── the new daemon finds backup Running as pid %d and adopts it: it waits for that process instead of starting another", pid)
	return d, dm.say.follow(ctx, d.url, dm.token, rev), nil
}

// end waits until every job is final, lists them, stops daemon d with
// SIGTERM and checks that no process of an attempt is left.
func (dm *demoRun) end(ctx context.Context, d *daemonProc, watch *following) error {
	err := poll.Until(ctx, 2*time.Minute, 20*time.Millisecond, "every job final", func() (bool, error) {
		for name := range dm.jobs {
			if j := dm.say.last(name); j == nil || !j.Status.Phase.Final() {
				return false, nil
			}
		}
		return true, nil
	})
	watch.stop()
	if err != nil {
		d.Kill()
		return err
	}
	dm.say.Say("── every job is final; jobs list says:")
	var table strings.Builder
	if err := cmdList(ctx, []string{"-server", d.url, "-token", dm.token}, &table); err != nil {
		d.Kill()
		return err
	}
	fmt.Fprint(dm.cfg.Out, indent(table.String()))
	dm.say.Say("── SIGTERM: graceful shutdown")
	if err := d.Stop(time.Minute); err != nil {
		return fmt.Errorf("daemon: %w\n%s", err, dm.logs.String())
	}
	runs := filepath.Join(dm.cfg.Dir, "runs")
	left, err := leftovers(runs)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("processes left behind: %v", left)
	}
	n, err := countRuns(runs)
	if err != nil {
		return err
	}
	dm.say.Say("daemon stopped; %d attempts ran as %d process groups across 2 daemons, one SIGKILL; no process is left", n, n)
	return nil
}

// leftovers returns the live processes of the attempts' groups (the shims'
// pids are in the claim files).
func leftovers(runs string) ([]int, error) {
	claims, err := filepath.Glob(filepath.Join(runs, "*.claim"))
	if err != nil {
		return nil, err
	}
	var left []int
	for _, c := range claims {
		b, err := os.ReadFile(c)
		if err != nil {
			return nil, err
		}
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		left = append(left, groupMembers(pid)...)
	}
	return left, nil
}

func countRuns(runs string) (int, error) {
	claims, err := filepath.Glob(filepath.Join(runs, "*.claim"))
	return len(claims), err
}

// indent indents every line of s.
func indent(s string) string {
	return "          " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n          ") + "\n"
}
