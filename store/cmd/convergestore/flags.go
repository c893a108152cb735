package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/converge-go/converge/internal/httpguard"
	"github.com/converge-go/converge/internal/privatefile"
	"github.com/converge-go/converge/store/httpstore"
)

// Defaults of the flags.
const (
	// defaultAddr is a loopback address: the store is never served beyond
	// this machine unless -addr says so.
	defaultAddr        = "127.0.0.1:7017"
	defaultLockTimeout = 5 * time.Second
)

// config is what the command line says.
type config struct {
	dir             string
	addr            string
	tlsCert, tlsKey string
	clientCA        string
	tokenFiles      listFlag // read-write
	readTokenFiles  listFlag // read-only
	insecureNoToken bool
	allowHosts      listFlag
	lockTimeout     time.Duration
	heartbeat       time.Duration
	// Snapshots (snapshots.go): a store restored from a file, or
	// recovered from a directory, and snapshots saved on a schedule.
	restoreFrom, recoverFrom string
	snapshotDir              string
	snapshotEvery            time.Duration
	snapshotKeep             int
	// The change log (changelog.go): shipped into logDir, or restored
	// from restoreFrom to a revision or a time.
	logDir            string
	restoreToRevision int64
	restoreToTime     time.Time
	// kinds is the file of the kinds' rules (store/apistore/schema).
	kinds string
	// insecurePermissions accepts places others may change or read
	// (places.go), with a warning.
	insecurePermissions bool
}

// listFlag is a flag that may be given several times; each value is kept.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	*l = append(*l, v)
	return nil
}

// newFlagSet returns the flags of convergestore, bound to cfg. Its output
// is discarded: errors and usage are printed by usageError.report.
func newFlagSet(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("convergestore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.dir, "dir", "", "the `directory` of the store file (store.db) and of the generated token file (token); created with mode 0700 (required); another user's, or one group or others may write, is refused")
	fs.StringVar(&cfg.addr, "addr", defaultAddr, "the TCP `address` to serve on; port 0 picks a free port, which the announcement names")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "PEM `file` of the server's certificate chain: serve HTTPS (with -tls-key)")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "PEM `file` of the certificate's private key (with -tls-cert)")
	fs.StringVar(&cfg.clientCA, "client-ca", "", "PEM `file` of the CAs that sign client certificates: every connection, probes included, must present one (needs -tls-cert)")
	fs.Var(&cfg.tokenFiles, "token-file", "read a read-write bearer token from this `file` (mode 0600, yours; repeatable); without it the token of DIR/token is used, generated the first time")
	fs.Var(&cfg.readTokenFiles, "read-token-file", "read a read-only bearer token from this `file` (mode 0600, yours; repeatable): it may read and watch, not write")
	fs.BoolVar(&cfg.insecureNoToken, "insecure-no-token", false, "serve without any token: every program that can reach the address may read and write (logged as a warning)")
	fs.BoolVar(&cfg.insecurePermissions, privatefile.AcceptFlag, false, "use -dir, -snapshot-dir, -log-dir, -recover-from, -restore-from and -tls-key even if another user may change them (or read the key), with a warning; without it such a place is refused")
	fs.Var(&cfg.allowHosts, "allow-host", "a host `name` clients reach the server by, besides IP literals and localhost (repeatable; \"*\" gives up the defence against DNS rebinding)")
	fs.DurationVar(&cfg.lockTimeout, "lock-timeout", defaultLockTimeout, "how long to wait for the store file while another process holds it")
	fs.StringVar(&cfg.kinds, "kinds", "", "a JSON `file` of kind rules per key prefix (store/apistore/schema): writes that break them are refused naming the field, defaults are filled in")
	fs.DurationVar(&cfg.heartbeat, "heartbeat", httpstore.DefaultHeartbeat, "how often a watch stream carries a heartbeat; clients judge a stream dead after two silent heartbeats")
	registerSnapshotFlags(fs, cfg)
	registerLogFlags(fs, cfg)
	return fs
}

// parseFlags reads the command line. A command line that cannot be read,
// or whose flags contradict each other, is a *usageError; -h is one that
// asks for help.
func parseFlags(args []string) (config, error) {
	var cfg config
	fs := newFlagSet(&cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, &usageError{help: true, fs: fs}
		}
		return cfg, &usageError{msg: err.Error(), fs: fs}
	}
	if fs.NArg() > 0 {
		return cfg, &usageError{msg: fmt.Sprintf("unexpected argument %q: convergestore takes flags only", fs.Arg(0)), fs: fs}
	}
	if msg := cfg.contradiction(); msg != "" {
		return cfg, &usageError{msg: msg, fs: fs}
	}
	return cfg, nil
}

// contradiction names what is missing, out of range or contradictory in
// cfg, or returns "".
func (cfg *config) contradiction() string {
	switch {
	case cfg.dir == "":
		return "no -dir given: name the directory of the store"
	case cfg.addr == "":
		return "-addr is empty"
	case !validAddr(cfg.addr):
		return fmt.Sprintf("-addr %q: want HOST:PORT, such as %s", cfg.addr, defaultAddr)
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return "-tls-cert and -tls-key go together"
	case cfg.clientCA != "" && cfg.tlsCert == "":
		return "-client-ca needs -tls-cert and -tls-key: client certificates are checked over TLS only"
	case cfg.insecureNoToken && (len(cfg.tokenFiles) > 0 || len(cfg.readTokenFiles) > 0):
		return "-insecure-no-token with -token-file or -read-token-file: give tokens or none"
	case cfg.lockTimeout <= 0:
		return fmt.Sprintf("-lock-timeout %v: want more than 0", cfg.lockTimeout)
	case cfg.heartbeat < time.Millisecond:
		return fmt.Sprintf("-heartbeat %v: want at least 1ms", cfg.heartbeat)
	}
	if _, err := httpguard.New(httpguard.Policy{Hosts: cfg.allowHosts}); err != nil {
		return "-allow-host: " + err.Error()
	}
	if msg := cfg.snapshotContradiction(); msg != "" {
		return msg
	}
	return cfg.logContradiction()
}

// validAddr reports whether addr is HOST:PORT (HOST may be empty: every
// interface) with a numeric port.
func validAddr(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
}

// usageError is a command line that cannot be read (exit 2), or a request
// for help (-h, exit 0).
type usageError struct {
	msg  string
	help bool
	fs   *flag.FlagSet
}

func (e *usageError) Error() string {
	if e.help {
		return "help requested"
	}
	return e.msg
}

// report prints the usage (on stdout for -h, else on stderr after the
// error) and returns the exit code.
func (e *usageError) report(stdout, stderr io.Writer) int {
	if e.help {
		e.printUsage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "convergestore: %s\n\n", e.msg)
	e.printUsage(stderr)
	return exitUsage
}

func (e *usageError) printUsage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	e.fs.SetOutput(w)
	e.fs.PrintDefaults()
	e.fs.SetOutput(io.Discard)
	fmt.Fprint(w, usageTail)
}

const usageHead = `Usage: convergestore -dir DIR [flags]

Serves the store in DIR/store.db over HTTP at /store, with the API-server
layer (finalizers, generation, status owned by the server), until SIGINT or
SIGTERM. Clients (httpstore.New, convergectl -server) use the URL it prints.

Flags:
`

const usageTail = `
Exit codes: 0 stopped by a signal, 1 error, 2 usage, 3 the store file is
damaged or not a store, 4 another process holds the store file.
`
