// Command convergectl reads and changes a converge store served over HTTP
// (store/httpstore), as kubectl does an API server's: any daemon that
// mounts httpstore.NewHandler, such as examples/jobs, is its server.
//
// Install it with
//
//	go install github.com/converge-go/converge/store/httpstore/cmd/convergectl@latest
//
// # Usage
//
//	convergectl [flags] get KEY                  print the object as one JSON line
//	convergectl [flags] list [-keys] [PREFIX]    print the objects under PREFIX and the list's revision
//	convergectl [flags] put [-create] [-rev R] KEY [FILE]
//	                                             write the JSON value in FILE (default or "-": stdin)
//	convergectl [flags] apply KEY [FILE]         merge a JSON merge patch (RFC 7386) into the value
//	convergectl [flags] delete [-rev R] KEY      delete the key
//	convergectl [flags] watch [-after R] [PREFIX] print changes as JSON lines until interrupted
//
// Flags, before the command:
//
//	-server URL    the store's URL, with the path it is mounted at ($CONVERGE_SERVER;
//	               default http://127.0.0.1:7007/store)
//	-token T       bearer token ($CONVERGE_TOKEN); -token-file FILE reads it from a file
//	-cacert FILE   PEM certificates to verify an https server with (default: the system's)
//	-cert FILE, -key FILE   a client certificate and its key, for servers that require one
//	-timeout D     bound on each request (default 30s; watch is bounded only by an interrupt)
//
// Objects are printed as {"key","revision","createRevision","value"}; list
// prints {"revision":R,"objects":[...]}, where R is the store revision the
// listing reflects (a watch from R misses nothing after it), and with -keys
// one "KEY REVISION" line per object. watch prints one line per change,
// {"type":"created"|"updated"|"deleted","key",...,"value"} (a deletion
// carries the last value), from -after R (default: the current revision,
// so only changes to come), and exits 0 on SIGINT or SIGTERM.
//
// put creates the key if it does not exist, else replaces its value with a
// compare-and-swap against the revision it has just read, retried if
// another writer got there first. With -create it only creates; with -rev R
// it only updates, and only if the key is still at revision R. apply reads
// the value, merges the patch, and writes it back against the revision read,
// retried likewise. delete removes the key at its latest revision, or with
// -rev R only if it is still at R. Values must be valid JSON.
//
// # Exit codes
//
//	0  done
//	1  an error: server unreachable (the outcome of a write is then unknown:
//	   get the key to find out), invalid input, an unexpected answer
//	2  a command line that cannot be read
//	3  not found: the key does not exist
//	4  conflict: the key is not at the revision given (-rev), or a write
//	   guard failed
//	5  exists: put -create of a key that exists
//	6  refused: no token, an unknown token, or a read-only token writing
//
// Errors are printed on standard error, one line, prefixed "convergectl:".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// Exit codes: see the package documentation.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
	exitConflict = 4
	exitExists   = 5
	exitRefused  = 6
)

// errUsage reports a command line that cannot be read.
var errUsage = errors.New("convergectl: usage")

const usage = `Usage: convergectl [flags] COMMAND [ARGS]

Commands:
  get KEY                         print the object as one JSON line
  list [-keys] [PREFIX]           print the objects under PREFIX and the list's revision
  put [-create] [-rev R] KEY [FILE]
                                  write the JSON value in FILE (default or "-": stdin)
  apply KEY [FILE]                merge a JSON merge patch (RFC 7386) into the value
  delete [-rev R] KEY             delete the key (at its latest revision, or at R)
  watch [-after R] [PREFIX]       print changes as JSON lines until interrupted

Exit codes: 0 done, 1 error, 2 usage, 3 not found, 4 conflict, 5 exists, 6 refused.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs one command line and returns its exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("convergectl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var conn connFlags
	conn.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	cmds := map[string]func(c *cli, ctx context.Context, args []string) error{
		"get":    (*cli).get,
		"list":   (*cli).list,
		"put":    (*cli).put,
		"apply":  (*cli).apply,
		"delete": (*cli).delete,
		"watch":  (*cli).watch,
	}
	cmd, ok := cmds[fs.Arg(0)]
	if !ok {
		fmt.Fprintf(stderr, "convergectl: unknown command %q\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	s, err := conn.client()
	if err != nil {
		return report(stderr, err)
	}
	defer s.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{s: s, timeout: conn.timeout, stdin: stdin, stdout: stdout, stderr: stderr}
	err = cmd(c, ctx, fs.Args()[1:])
	if errors.Is(err, errUsage) {
		fs.Usage()
		return exitUsage
	}
	return report(stderr, err)
}

// report prints err on stderr and returns its exit code.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "convergectl:", err)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return exitNotFound
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrGuardFailed):
		return exitConflict
	case errors.Is(err, store.ErrExists):
		return exitExists
	case errors.Is(err, httpstore.ErrUnauthorized), errors.Is(err, httpstore.ErrForbidden):
		return exitRefused
	}
	return exitError
}
