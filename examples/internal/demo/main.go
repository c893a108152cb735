package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/converge-go/converge/examples/internal/pods"
)

// ErrUsage, returned by a demo's run function, makes Main print the usage
// and exit with status 2.
var ErrUsage = errors.New("demo: invalid command line")

// Main is a demo's main function. In a process a pods.Supervisor started
// as a pod, it runs the pod (pods.RunPod) and exits. Otherwise it parses
// the flags the demo defined before calling it, with description in the
// usage, and calls run with a context cancelled on SIGINT or SIGTERM and
// the path of this executable, which the demo's pods run. It exits with
// status 0, 1 if run failed, or 2 if the command line was invalid
// (arguments left over, or run returned an error matching ErrUsage).
func Main(name, description string, run func(ctx context.Context, exe string) error) {
	if pods.IsPod() {
		os.Exit(pods.RunPod(os.Args[1:]))
	}
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [flags]\n\n%s\n\nFlags:\n", name, description)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	exe, err := os.Executable()
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, exe)
		stop()
	}
	switch {
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(flag.CommandLine.Output(), "%s: %v\n\n", name, err)
		flag.Usage()
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
