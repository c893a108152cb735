// Command replicaset is the ReplicaSet of "The Reconciliation Loop", made
// real with converge: a controller keeps N child processes ("pods") running,
// heals them after a power failure, scales them, and keeps healing while its
// store is unreachable.
//
// Run it from the repository root:
//
//	go run ./examples/replicaset
//	go run ./examples/replicaset -replicas 4 -store /tmp/rs -v
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

const description = `replicaset runs a narrated demo of a reconciliation loop. A controller keeps
a replica set's pods, which are child processes of this program, matching the
spec held in a bbolt store: it converges to -replicas pods, brings them back
after a "power failure" kills them all with SIGKILL, scales up and down, and
keeps replacing a killed pod while the store is unreachable, writing the
status once the store returns. On exit no pod is left running. With -store,
the desired state survives a restart of the demo.`

func main() {
	if os.Getenv(PodEnv) == "1" {
		os.Exit(runPod(os.Args[1:]))
	}
	os.Exit(run())
}

// run parses the flags, runs the demo and returns the exit code.
func run() int {
	replicas := flag.Int("replicas", 3, "number of pods to start with (at least 1); the demo then scales to N+2 and N-1")
	dir := flag.String("store", "", "directory of the bbolt store file (default: a temporary directory removed at exit)")
	verbose := flag.Bool("v", false, "log the controller at debug level (default: warnings only)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: replicaset [flags]\n\n%s\n\nFlags:\n", description)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *replicas < 1 || flag.NArg() > 0 {
		flag.Usage()
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicaset:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = Run(ctx, Config{Replicas: *replicas, StoreDir: *dir, Executable: exe, Out: os.Stdout, Logger: logger})
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicaset:", err)
		return 1
	}
	return 0
}
