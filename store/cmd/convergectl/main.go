package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/converge-go/converge/internal/invalid"
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

// errInvalid reports input convergectl refuses (a value that is not JSON
// or too large, a -cacert file without a certificate). It matches
// store.ErrInvalid.
var errInvalid error = invalid.New("convergectl")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs one command line, a watch until ctx is done (an interrupt),
// and returns its exit code. Nothing is sent before the whole command line
// has been read.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	c.flags.warnings = stderr
	act, err := c.parse(args)
	if err != nil {
		return c.report(err)
	}
	if c.s != nil {
		defer c.s.Close()
	}
	// A trace context handed down as $TRACEPARENT (W3C Trace Context, as
	// tracing tools pass it to the programs they run) is the cause of
	// every write: the server records it with the revision it makes.
	ctx = store.WithCause(ctx, os.Getenv("TRACEPARENT"))
	return c.report(act(ctx))
}

// parse reads the command line and connects to the server it names,
// returning the action the command line asks for.
func (c *cli) parse(args []string) (action, error) {
	c.global = quietFlagSet("convergectl")
	c.flags.register(c.global)
	if err := c.global.Parse(args); err != nil {
		return nil, flagError(err)
	}
	if err := c.flags.check(); err != nil {
		return nil, err
	}
	if c.global.NArg() == 0 {
		return nil, usagef("no command given")
	}
	cmd := lookup(c.global.Arg(0))
	if cmd == nil {
		return nil, usagef("unknown command %q", c.global.Arg(0))
	}
	act, err := cmd.read(c, c.global.Args()[1:])
	if err != nil || c.offline {
		return act, err
	}
	if c.s, err = c.flags.client(); err != nil {
		return nil, err
	}
	return act, nil
}

// report prints err and returns its exit code: a usage error's line and
// the usage on stderr (-h: the usage on stdout), any other error as one
// line on stderr that names convergectl once.
func (c *cli) report(err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if ue.help {
			ue.printUsage(c.stdout, c.global)
			return exitOK
		}
		fmt.Fprintln(c.stderr, "convergectl:", ue.Error())
		ue.printUsage(c.stderr, c.global)
		return exitUsage
	}
	err = c.flags.explain(err)
	msg := err.Error()
	if !strings.HasPrefix(msg, "convergectl: ") {
		msg = "convergectl: " + msg
	}
	fmt.Fprintln(c.stderr, msg)
	return exitCode(err)
}

// exitCode returns the exit code of an error that is not a usage error.
func exitCode(err error) int {
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
