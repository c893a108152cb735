package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/converge-go/converge/store/boltstore"
)

// Exit codes: see the package documentation.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitDamaged = 3
	exitLocked  = 4
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run reads the command line, serves until ctx ends (a signal) and returns
// the exit code. The announcement of what is served goes to stdout; logs
// and errors go to stderr. Nothing it writes holds a token.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args)
	var ue *usageError
	if errors.As(err, &ue) {
		return ue.report(stdout, stderr)
	}
	if err == nil {
		log := slog.New(slog.NewTextHandler(stderr, nil))
		err = serve(ctx, cfg, stdout, log)
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "convergestore: %v\n", err)
	return exitCode(err)
}

// exitCode returns the exit code that tells err's kind apart: a damaged
// store file (or one that is not a store), a store file another process
// holds, or any other error.
func exitCode(err error) int {
	switch {
	case errors.Is(err, boltstore.ErrCorrupt), errors.Is(err, boltstore.ErrFormat):
		return exitDamaged
	case errors.Is(err, boltstore.ErrLocked):
		return exitLocked
	}
	return exitError
}
