package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/converge-go/converge/examples/internal/poll"
	"github.com/converge-go/converge/examples/internal/procstat"
	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/queue"
)

// killJob is a job of the kill test and what it must end as.
type killJob struct {
	name, mode, arg string
	retries         int
	timeout         time.Duration
	// The expected end.
	phase    Phase
	attempts int
	exit     int
}

// killJobs returns n jobs, a fifth of each kind: fast, failing, flaky,
// sleeping across kills, timing out.
func killJobs(n int) []killJob {
	var jobs []killJob
	for i := range n {
		name := fmt.Sprintf("j%02d", i)
		var j killJob
		switch i % 5 {
		case 0:
			j = killJob{mode: "ok", phase: Succeeded, attempts: 1, exit: 0}
		case 1:
			j = killJob{mode: "fail", arg: "3", retries: 1, phase: Failed, attempts: 2, exit: 3}
		case 2:
			j = killJob{mode: "flaky", arg: "2", retries: 3, phase: Succeeded, attempts: 3, exit: 0}
		case 3:
			j = killJob{mode: "sleep", arg: fmt.Sprintf("%dms", 1500+500*(i%4)), phase: Succeeded, attempts: 1, exit: 0}
		case 4:
			j = killJob{mode: "hang", retries: 1, timeout: time.Second, phase: Failed, attempts: 2, exit: 143}
		}
		j.name = name
		jobs = append(jobs, j)
	}
	return jobs
}

// TestSIGKILLedDaemonNeverRunsAJobTwiceAtOnceNorRerunsAFinishedOne adds 20
// mixed jobs through the jobs command while the daemon is SIGKILLed at
// random moments (at least 10 times) and restarted, then checks every job's
// final phase, attempts and exit code, that the commands' own log shows no
// two runs of a job at once and no run after a success, and that no process
// is left. JOBS_KILL_TEST_LONG=1 runs 100 jobs and 50 kills.
func TestSIGKILLedDaemonNeverRunsAJobTwiceAtOnceNorRerunsAFinishedOne(t *testing.T) {
	nJobs, nKills := 20, 10
	if os.Getenv("JOBS_KILL_TEST_LONG") == "1" {
		nJobs, nKills = 100, 50
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	k := &killRun{exe: exe, dir: dir, taskLog: filepath.Join(dir, "tasks.log"), env: []string{testMainEnv + "=1"},
		daemonArgs: []string{"-workers", "4", "-backoff", "200ms", "-backoff-max", "1s", "-grace", "1s"}}
	start := time.Now()
	jobs := killJobs(nJobs)
	kills := k.addWhileKilling(t, ctx, jobs, nKills)
	t.Logf("%d jobs added, daemon SIGKILLed %d times in %v", nJobs, kills, time.Since(start).Round(time.Millisecond))

	// A last daemon runs every job to its end, then shuts down gracefully.
	final := k.runToTheEnd(t, ctx, nJobs)
	t.Logf("all final %v after the start; %d daemons", time.Since(start).Round(time.Millisecond), kills+1)
	checkEnds(t, jobs, final)
	pids := checkTaskLog(t, k.taskLog, jobs)

	// No process is left: no command, no shim, no member of a shim's group.
	shims := shimPids(t, filepath.Join(dir, "runs"))
	err = poll.Until(ctx, 30*time.Second, 50*time.Millisecond, "no process left", func() (bool, error) {
		for _, pid := range append(pids, shims...) {
			if p, ok := procstat.Read(pid); ok && !p.Ended() {
				return false, nil
			}
			if len(groupMembers(pid)) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Error(err)
	}
	// The kills hit attempts in flight.
	logs := k.logs.String()
	adopted := strings.Count(logs, "adopting a running attempt")
	judged := strings.Count(logs, "judging an attempt that ended unwatched")
	relaunched := strings.Count(logs, "launching a recorded attempt that never ran")
	t.Logf("after restarts: %d attempts adopted while running, %d judged by their result file, %d launched from a recorded intent", adopted, judged, relaunched)
	if adopted == 0 {
		t.Error("no kill hit a running attempt: the test proved nothing")
	}
	if t.Failed() {
		t.Logf("daemon logs:\n%s", logs)
	}
}

// killRun is the setting of the kill test: its daemons' directory, their
// arguments and logs, and the log the jobs' commands write.
type killRun struct {
	exe, dir, taskLog string
	env, daemonArgs   []string
	logs              syncbuf.Buffer
}

// addWhileKilling adds the jobs with the jobs command, one after another,
// each add retried until it succeeds, while daemons are started and
// SIGKILLed at random moments, at least nKills times and until every job
// has been added. It returns how many daemons it killed.
func (k *killRun) addWhileKilling(t *testing.T, ctx context.Context, jobs []killJob, nKills int) int {
	var adds sync.WaitGroup
	addErr := make(chan error, 1)
	adds.Go(func() {
		for _, j := range jobs {
			if err := k.add(ctx, j); err != nil {
				addErr <- err
				return
			}
		}
	})
	kills := 0
	addsDone := make(chan struct{})
	go func() { adds.Wait(); close(addsDone) }()
	for kills < nKills || !closed(addsDone) {
		d, err := startDaemon(ctx, k.exe, k.env, k.dir, &k.logs, time.Minute, k.daemonArgs...)
		if err != nil {
			t.Fatalf("start daemon: %v\n%s", err, k.logs.String())
		}
		select {
		case <-time.After(time.Duration(200+rand.IntN(1300)) * time.Millisecond):
		case err := <-addErr:
			d.Kill()
			t.Fatal(err)
		}
		d.Kill()
		kills++
	}
	select {
	case err := <-addErr:
		t.Fatal(err)
	default:
	}
	return kills
}

// add runs "jobs add" for j until it succeeds, trying again while the
// daemon is down.
func (k *killRun) add(ctx context.Context, j killJob) error {
	args := []string{"add", "-dir", k.dir, "-retries", strconv.Itoa(j.retries), "-timeout", j.timeout.String(), j.name, "--", k.exe, taskArg, k.taskLog, j.name, j.mode}
	if j.arg != "" {
		args = append(args, j.arg)
	}
	return poll.Until(ctx, time.Minute, 50*time.Millisecond, "jobs add "+j.name, func() (bool, error) {
		cmd := exec.CommandContext(ctx, k.exe, args...)
		cmd.Env = append(os.Environ(), k.env...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			return true, nil
		}
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && (bytes.Contains(out, []byte("unavailable")) || bytes.Contains(out, []byte("no daemon found"))) {
			return false, nil // the daemon is down: try again
		}
		return false, fmt.Errorf("jobs add: %v: %s", err, out)
	})
}

// runToTheEnd starts a last daemon, waits until its nJobs jobs are final,
// stops it gracefully and returns the jobs by name.
func (k *killRun) runToTheEnd(t *testing.T, ctx context.Context, nJobs int) map[string]*Job {
	d, err := startDaemon(ctx, k.exe, k.env, k.dir, &k.logs, time.Minute, k.daemonArgs...)
	if err != nil {
		t.Fatalf("start daemon: %v\n%s", err, k.logs.String())
	}
	c := dirClient(t, k.dir, d.url)
	final := make(map[string]*Job)
	err = poll.Until(ctx, 5*time.Minute, 100*time.Millisecond, "every job final", func() (bool, error) {
		objs, _, err := c.List(ctx, KeyPrefix)
		if err != nil {
			return false, err
		}
		for _, o := range objs {
			final[strings.TrimPrefix(o.Key, KeyPrefix)] = o.Value
		}
		for _, o := range objs {
			if !o.Value.Status.Phase.Final() {
				return false, nil
			}
		}
		return len(objs) == nJobs, nil
	})
	if err != nil {
		d.Kill()
		t.Fatalf("%v\n%s", err, k.logs.String())
	}
	if err := d.Stop(time.Minute); err != nil {
		t.Errorf("graceful stop: %v", err)
	}
	return final
}

// checkEnds checks that every job ended as its kind must.
func checkEnds(t *testing.T, jobs []killJob, final map[string]*Job) {
	for _, j := range jobs {
		got := final[j.name]
		if got == nil {
			t.Errorf("%s: missing", j.name)
			continue
		}
		st := got.Status
		exit := -999
		if st.ExitCode != nil {
			exit = *st.ExitCode
		}
		if st.Phase != j.phase || st.Attempts != j.attempts || exit != j.exit {
			t.Errorf("%s (%s %s): phase %s, attempts %d, exit %d (%q); want %s, %d, %d",
				j.name, j.mode, j.arg, st.Phase, st.Attempts, exit, st.Message, j.phase, j.attempts, j.exit)
		}
	}
}

// checkTaskLog checks the commands' own log: per job, one run at a time,
// none after a success, as many runs as attempts, and the backoff between
// them. It returns the pids of the runs.
func checkTaskLog(t *testing.T, taskLog string, jobs []killJob) []int {
	lines, err := readTaskLog(taskLog)
	if err != nil {
		t.Fatal(err)
	}
	modes := make(map[string]string)
	for _, j := range jobs {
		modes[j.name] = j.mode
	}
	running := make(map[string]int) // job -> pid of its run that has not ended
	lastEnd := make(map[string]time.Time)
	backoff := queue.NewExponential[string](200*time.Millisecond, time.Second, 0)
	succeeded := make(map[string]bool)
	starts := make(map[string]int)
	var pids []int
	for _, l := range lines {
		switch l.kind {
		case "overlap":
			t.Errorf("%s: pid %d started while another run of the job held its lock", l.name, l.pid)
		case "start":
			pids = append(pids, l.pid)
			if succeeded[l.name] {
				t.Errorf("%s: run %d started after the job had succeeded", l.name, l.pid)
			}
			// Only a timed-out run ends without an end line (hang jobs:
			// their overlaps show as "overlap" lines, from the lock).
			if prev, ok := running[l.name]; ok && modes[l.name] != "hang" {
				t.Errorf("%s: run %d started before run %d had ended", l.name, l.pid, prev)
			}
			// The backoff after a failed run, though daemons died during it.
			if end, ok := lastEnd[l.name]; ok {
				if gap, want := l.at.Sub(end), backoff.Delay(starts[l.name]-1); gap < want {
					t.Errorf("%s: run %d started %v after run %d failed; the backoff is %v", l.name, starts[l.name]+1, gap, starts[l.name], want)
				}
			}
			running[l.name] = l.pid
			starts[l.name]++
		case "end":
			delete(running, l.name)
			lastEnd[l.name] = l.at
			if l.code == 0 {
				succeeded[l.name] = true
			}
		}
	}
	for _, j := range jobs {
		if starts[j.name] != j.attempts {
			t.Errorf("%s: the command ran %d times; want %d", j.name, starts[j.name], j.attempts)
		}
	}
	return pids
}

// shimPids returns the pids written in the runs' claim files.
func shimPids(t *testing.T, runs string) []int {
	t.Helper()
	claims, err := filepath.Glob(filepath.Join(runs, "*.claim"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, c := range claims {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
