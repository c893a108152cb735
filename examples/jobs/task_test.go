package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The commands the tests' jobs run are this test binary again, with
// taskArg as first argument: "jobs-test-task LOG NAME MODE [ARG]". A task
// appends "start NAME PID 0 TIME" to LOG, holds an exclusive lock on LOG.NAME.lock
// while it runs (a second task of the same job running at once finds it
// taken and writes "overlap NAME PID"), does what MODE says and appends
// "end NAME PID CODE TIME" before exiting (TIME in Unix nanoseconds) with CODE (a task killed by its timeout
// writes no end line). Modes:
//
//	ok          exit 0
//	fail CODE   exit CODE
//	flaky N     exit 1 in its first N runs (counted in LOG), then 0
//	sleep D     sleep D, then exit 0
//	hang        sleep until killed
//	stubborn    ignore SIGTERM, sleep until killed (SIGKILL)
const taskArg = "jobs-test-task"

func runTask(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "task: want LOG NAME MODE [ARG]")
		return 2
	}
	logPath, name, mode := args[0], args[1], args[2]
	arg := ""
	if len(args) > 3 {
		arg = args[3]
	}
	lock, err := os.OpenFile(logPath+"."+name+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "task:", err)
		return 2
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		appendLine(logPath, "overlap %s %d", name, os.Getpid())
		return 99
	}
	appendLine(logPath, "start %s %d 0 %d", name, os.Getpid(), time.Now().UnixNano())
	code := 0
	switch mode {
	case "ok":
	case "fail":
		code, _ = strconv.Atoi(arg)
	case "flaky":
		n, _ := strconv.Atoi(arg)
		if countStarts(logPath, name) <= n {
			code = 1
		}
	case "sleep":
		d, _ := time.ParseDuration(arg)
		time.Sleep(d)
	case "hang":
		select {}
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		select {}
	default:
		code = 2
	}
	appendLine(logPath, "end %s %d %d %d", name, os.Getpid(), code, time.Now().UnixNano())
	return code
}

// appendLine appends one line with one write (O_APPEND), so concurrent
// tasks' lines do not interleave.
func appendLine(path, format string, args ...any) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "task:", err)
		os.Exit(2)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, format+"\n", args...); err != nil {
		fmt.Fprintln(os.Stderr, "task:", err)
		os.Exit(2)
	}
}

// taskLine is one line of a task log.
type taskLine struct {
	kind, name string
	pid, code  int
	at         time.Time
}

func readTaskLog(path string) ([]taskLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []taskLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 {
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
		l := taskLine{kind: fs[0], name: fs[1]}
		l.pid, _ = strconv.Atoi(fs[2])
		if len(fs) > 4 {
			l.code, _ = strconv.Atoi(fs[3])
			ns, _ := strconv.ParseInt(fs[4], 10, 64)
			l.at = time.Unix(0, ns)
		}
		lines = append(lines, l)
	}
	return lines, sc.Err()
}

func countStarts(path, name string) int {
	lines, _ := readTaskLog(path)
	n := 0
	for _, l := range lines {
		if l.kind == "start" && l.name == name {
			n++
		}
	}
	return n
}
