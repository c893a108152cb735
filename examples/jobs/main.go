// Command jobs is a job runner built on converge: a daemon keeps jobs (a
// command, its retries and timeout) in a bbolt store with the API-server
// layer over it (store/apistore), serves that store over HTTP for the
// commands below, and runs each job's command as a real OS process, to
// success at most once, with retries on the controller's backoff, timeouts
// and a concurrency limit. It survives being killed with SIGKILL at any
// moment: no job ever has two attempts running at once, no finished job
// runs again, and a job deleted while it was down has its attempt stopped
// when it starts again. With -store-server it runs the jobs of a store
// served elsewhere instead (see Store server). The reconciler is in
// reconciler.go; main.go only wires: it reads the command line and starts
// the daemon (daemon.go, storeserver.go) or a client command (cli.go).
//
// Run it from the repository root:
//
//	go run ./examples/jobs                # the narrated demo
//	go run ./examples/jobs daemon &       # a daemon in ./.jobs
//	go run ./examples/jobs add -retries 2 -timeout 1m backup -- tar czf /tmp/b.tgz /etc
//	go run ./examples/jobs list
//	go run ./examples/jobs run hello -- echo hello   # add, then wait for it
//
// # Commands
//
//	jobs                      narrated demo (a daemon in a temporary directory, killed and restarted)
//	jobs daemon [flags]       run the daemon until SIGINT or SIGTERM
//	jobs add [-retries N] [-timeout D] NAME -- COMMAND [ARG...]
//	                          add a job (adding the same spec again is a no-op)
//	jobs run [...same...]     add a job, then wait until it is final
//	jobs wait NAME...         wait until the jobs are final
//	jobs list [-json]         list the jobs: phase, attempts, last exit code, message
//	jobs delete [-wait D] NAME...
//	                          delete jobs: each is marked until the daemon has
//	                          stopped its running attempt, then removed; waits
//	                          up to -wait (default 5s) and says which are only
//	                          marked
//
// The daemon's HTTP server also serves converge's debug page at
// /debug/converge/ (why a job is not converging: its retries, last error,
// next retry) and Prometheus metrics at /metrics, under controller-runtime's
// names, both behind the daemon's token (see Tokens):
//
//	curl -H "Authorization: Bearer $(cat .jobs/token)" http://127.0.0.1:7007/debug/converge/
//
// and, for Prometheus, authorization.credentials_file: .jobs/token.
//
// The client commands find the store by -server (or $JOBS_SERVER), else by
// the file daemon.url in the daemon's directory -dir ($JOBS_DIR, default
// .jobs). Exit codes: 0 done (for run and wait: every job succeeded), 1 an
// error or a failed job, 2 a command line that cannot be read. The store is
// served by store/httpstore with the API-server layer, which applies its
// rules whoever writes: any of its clients (convergectl) reads and writes
// the same jobs under the prefix "jobs/", a job's generation is bumped by
// every change of its spec, its status is the daemon's, and "convergectl
// delete" marks a job as "jobs delete" does.
//
// # Tokens
//
// Whoever can add a job runs a command as the daemon's user, so the daemon
// never serves its store without credentials unless told to. Its bearer
// token is -token, else $JOBS_TOKEN (read after the flags: -h never shows
// it), else one it generates the first time (32 bytes from crypto/rand, in
// hex) into the file token in its directory, created with mode 0600 and
// kept across restarts; a token file that others may read or change, or
// that another user owns, is refused, by the daemon and by the clients.
// The client commands send -token, else the token in -token-file, else
// $JOBS_TOKEN, else the token file beside daemon.url when they found the
// daemon there (never to a -server named on the command line).
// -insecure-no-token serves without a token, with a warning in the log:
// every program that reaches the address can then run commands. The token
// is never printed or logged.
//
// Whoever may change the daemon's directory may change its jobs, so the
// daemon refuses a -dir of another user than its own and root, or one
// group or others may write, and a -store-key others may read or change
// (internal/privatefile, the rule of its token file), saying what is
// wrong and how to fix it (chmod 700 DIR, chmod 600 KEY, chown);
// -insecure-permissions uses it with a warning. A -dir that does not exist
// is made with mode 0700.
//
// The token guards everything the daemon serves: the store, the debug page
// and the metrics; the probes answer without it, with their bare status
// only. Whatever the token, a request whose Host header names a host other
// than an IP address, localhost or one given with -allow-host NAME
// (repeatable) is refused, and so is a write from a web page of another
// origin or a file://, or one not sent as application/json (store/httpstore
// and reconcile/manager): no page open in a browser on this machine can add a
// job, even to a daemon started with -insecure-no-token.
//
// Whoever holds the token writes a job's status as well as its spec, so the
// daemon trusts neither where it matters (trust.go): the run ID that names
// an attempt's files and finds its process is recomputed from the job's key,
// incarnation, generation and attempt; a pid in status is signalled or
// adopted only if it leads its process group and carries the run ID; an
// attempt count below 0 buys no retries; a spec no attempt can run is
// refused (Failed, "invalid spec: ..."), not retried; jobs list and wait
// quote what is not printable.
//
// # A job's life
//
// Spec (Command, Args, Retries, Timeout) is written by users; Status by the
// daemon, always with a compare-and-swap write through its controller
// (resource.WriteStatus on Request.Store), in this order (Pending is a job
// with no status yet):
//
//		Pending ──▶ Starting ──▶ Running ──▶ Succeeded
//		               ▲            │
//		               │            ├──▶ Backoff ──(NextAttemptAt)──▶ Starting
//		               │            └──▶ Failed (1+Retries attempts failed)
//		               └── (never ran: launched again under the same run ID)
//
//	  - Starting is the intent, recorded before anything is started: attempt
//	    n, under a run ID unique to the job, its generation and n. Only then is
//	    the attempt's process started: a shim (this program again) that leads
//	    a process group of its own, claims the run ID with a file created
//	    exclusively (a second shim of the same run runs nothing), runs the
//	    command, enforces the timeout (SIGTERM to the group, SIGKILL after the
//	    grace period), and records the outcome in a result file (synced,
//	    renamed into place) before it exits and takes its group with it.
//	  - Running records the shim's pid and start time (clock ticks since boot)
//	    before the daemon waits for it.
//	  - When the attempt ends, its result file decides: exit code 0 is
//	    Succeeded; otherwise Backoff with NextAttemptAt = now +
//	    base·2^(n-1) (the controller's queue.Exponential limiter, stored so
//	    that the delay survives a restart; the key is requeued with
//	    Result.RequeueAfter), or Failed when 1+Retries attempts have failed.
//	  - An attempt whose process cannot be started (the command not found or
//	    not executable, its argument list too long) is a failed attempt with
//	    exit code -1 whose message says why, recorded by the shim, or by the
//	    daemon when the shim itself cannot be started: with no retry left the
//	    job is Failed, and "jobs wait" returns.
//
// A daemon that starts (after a crash, a SIGKILL, a reboot of the daemon
// alone) finds each job in Starting or Running and settles it before
// anything else: if the recorded process still runs and is the same process
// (pid and start time), or a process carries the run ID in its environment,
// it adopts it and waits for it (polling /proc, since it is not its child);
// if it has ended, the result file judges it, and an attempt whose process
// ended without a result (its shim was killed) counts as failed with exit
// code -1; if the run was never claimed, the command never ran, and it is
// launched. So an attempt is never started while another of the same job
// may run, and a job whose attempt succeeded never runs again.
//
// One reconcile waits for one attempt: the controller's workers (-workers)
// bound the attempts running at once. A new generation of a final job's
// spec runs it again from attempt 1. On SIGINT or SIGTERM the daemon stops
// taking work, gives running attempts -grace to end, stops the others (each
// counts as a failed attempt, recorded as stopped by the daemon: give jobs
// retries if they must survive that) and exits once every process it
// started has been reaped.
//
// # Deleting a job
//
// Before it records a job's first attempt, the daemon puts its finalizer
// (Finalizer, "jobs.example/attempt") on the job (resource.Finalize). So
// deleting the job, with "jobs delete", convergectl or any client, only
// marks it (metadata.deletion): it stays readable, shown as Deleting by
// "jobs list", and cannot be added again meanwhile. The daemon stops its
// attempt, if one runs (SIGTERM to the shim, SIGKILL to its group after
// -grace), then removes the finalizer, which removes the job. A daemon
// that was down when the job was deleted, or was killed after the mark and
// before the attempt stopped, does this when it starts: it finds the job
// marked and stops the attempt it adopts, so no deletion leaves a process
// running. "jobs delete" waits up to -wait for the job to go, and says
// which jobs are only marked, waiting for their attempt to stop (or for a
// daemon to start).
//
// # Store server
//
// With -store-server URL the daemon keeps no store of its own: it runs the
// jobs of a store served elsewhere with the API-server layer, such as the
// convergestore command's (store/cmd/convergestore), which
// applies the layer's rules server-side for the daemon and every other
// client alike. -store-token-file F names the file of that server's token
// (refused if others may read it, as the daemon's own); -store-ca F
// verifies an https server with the CAs of a PEM file, and -store-cert F
// with -store-key F identify the daemon with a client certificate (a
// -store-ca or -store-cert another user may change, or a -store-key
// others may read, is refused unless -insecure-permissions). The
// daemon then serves no store (no daemon.url), only its debug page, its
// metrics and the probes; the client commands reach the jobs through the
// store server: -server URL with -token-file F. Jobs can be added and
// deleted while the daemon is down, and it runs (or stops) them when it
// starts. Run one daemon per store: two would both run its jobs. The
// attempts' files stay in the daemon's directory, which one daemon holds
// at a time (the file daemon.lock).
//
// The daemon's HTTP server (reconcile/manager) serves the store at /store
// (unless on a store server), and /healthz and /readyz; the file
// daemon.url in its directory holds the store's URL, daemon.http the
// server's. Linux only: processes are found through /proc.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/converge-go/converge/internal/privatefile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Usage:
  jobs                        run the narrated demo
  jobs daemon [flags]         run the daemon (see jobs daemon -h)
  jobs add [-retries N] [-timeout D] NAME -- COMMAND [ARG...]
  jobs run [-retries N] [-timeout D] NAME -- COMMAND [ARG...]
  jobs wait NAME...
  jobs list [-json]
  jobs delete [-wait D] NAME...
Client commands take -dir DIR ($JOBS_DIR), -server URL ($JOBS_SERVER),
-token T ($JOBS_TOKEN; default: the daemon's token file in DIR, when -server
is not given) and -token-file F.
`

// run runs the command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if id := os.Getenv(runEnv); id != "" {
		return runShim(id, args)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 {
		return exitCode(runDemo(ctx, DemoConfig{Out: stdout}), stderr)
	}
	cmds := map[string]func(context.Context, []string, io.Writer) error{
		"daemon": func(ctx context.Context, args []string, _ io.Writer) error { return cmdDaemon(ctx, args, stderr) },
		"add":    cmdAdd,
		"run":    cmdRun,
		"wait":   cmdWait,
		"list":   cmdList,
		"delete": cmdDelete,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprint(stderr, usage)
		return 2
	}
	return exitCode(cmd(ctx, args[1:], stdout), stderr)
}

// exitCode reports err on stderr and maps it to an exit code.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprint(stderr, usage)
		return 2
	default:
		fmt.Fprintln(stderr, "jobs:", err)
		return 1
	}
}

// cmdDaemon: jobs daemon [flags].
func cmdDaemon(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	cfg := DaemonConfig{}
	fs.StringVar(&cfg.Dir, "dir", envOr("JOBS_DIR", ".jobs"), "directory of the store, the attempts' files and daemon.url ($JOBS_DIR)")
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:7007", "address to serve the store (unless -store-server), the debug page, the metrics and the probes on (port 0: any; daemon.http says which)")
	fs.StringVar(&cfg.Token, "token", "", "bearer token clients must send (default $JOBS_TOKEN, else the one generated once into DIR/"+TokenFile+"; prefer $JOBS_TOKEN: others can see command lines)")
	fs.BoolVar(&cfg.InsecureNoToken, "insecure-no-token", false, "serve without a token: every program that reaches -addr can run commands as you")
	fs.Func("allow-host", "a host name clients may reach the daemon by, besides IP addresses and localhost (repeatable)", func(name string) error {
		cfg.AllowedHosts = append(cfg.AllowedHosts, name)
		return nil
	})
	fs.BoolVar(&cfg.InsecurePermissions, privatefile.AcceptFlag, false, "use a -dir another user may change, or a -store-key others may read, with a warning; without it such a place is refused")
	fs.IntVar(&cfg.Workers, "workers", 4, "attempts running at once")
	fs.DurationVar(&cfg.Grace, "grace", 5*time.Second, "SIGTERM to SIGKILL for a stopped attempt, and the wait for running attempts at shutdown")
	fs.DurationVar(&cfg.BackoffBase, "backoff", time.Second, "delay after the first failed attempt, doubled after each further one")
	fs.DurationVar(&cfg.BackoffMax, "backoff-max", 5*time.Minute, "longest delay between attempts")
	var sf storeServerFlags
	sf.register(fs)
	verbose := fs.Bool("v", false, "log at debug level")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || cfg.Workers < 1 || cfg.Grace <= 0 || cfg.BackoffBase <= 0 || cfg.BackoffMax < cfg.BackoffBase {
		return errUsage
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := sf.apply(&cfg); err != nil {
		return err
	}
	// Read after parsing, so that -h never shows it.
	if cfg.Token == "" && !cfg.InsecureNoToken {
		cfg.Token = os.Getenv("JOBS_TOKEN")
	}
	if cfg.Token != "" && cfg.InsecureNoToken {
		return errUsage
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Executable = exe
	return RunDaemon(ctx, cfg)
}

// storeServerFlags are the daemon's flags of a store served elsewhere.
type storeServerFlags struct {
	url, tokenFile, ca, cert, key string
}

func (f *storeServerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "store-server", "", "run the jobs of the store served at this URL, with the API-server layer (convergestore's, such as http://127.0.0.1:7017/store), instead of DIR's bbolt file; the daemon then serves no store")
	fs.StringVar(&f.tokenFile, "store-token-file", "", "read the store server's bearer token from this file (yours, mode 0600)")
	fs.StringVar(&f.ca, "store-ca", "", "verify an https store server's certificate with the CAs of this PEM file (default: the system's)")
	fs.StringVar(&f.cert, "store-cert", "", "identify to the store server with this client certificate (PEM; with -store-key)")
	fs.StringVar(&f.key, "store-key", "", "the key of -store-cert (PEM)")
}

// apply sets cfg's store server from the flags: errUsage for a store
// flag without -store-server, an error for a token or TLS file that
// cannot be used.
func (f *storeServerFlags) apply(cfg *DaemonConfig) error {
	if f.url == "" {
		if f.tokenFile != "" || f.ca != "" || f.cert != "" || f.key != "" {
			return errUsage
		}
		return nil
	}
	cfg.StoreServer = f.url
	if f.tokenFile != "" {
		tok, ok, err := readTokenFile(f.tokenFile)
		if err != nil {
			return fmt.Errorf("-store-token-file: %w", err)
		}
		if !ok {
			return fmt.Errorf("-store-token-file: %s: no such file", f.tokenFile)
		}
		cfg.StoreToken = tok
	}
	if err := checkStoreFiles(f.ca, f.cert, f.key, cfg.InsecurePermissions, cfg.Logger); err != nil {
		return err
	}
	var err error
	cfg.StoreTLS, err = storeTLS(f.ca, f.cert, f.key)
	return err
}
