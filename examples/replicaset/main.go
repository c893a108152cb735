// Command replicaset is the ReplicaSet of "The Reconciliation Loop", made
// real with converge: a controller keeps N child processes ("pods") running,
// heals them after a power failure, scales them, keeps healing while its
// store is unreachable, heals them from its checkpoint when the store and
// the controller are both gone, through a finalizer stops the pods of a
// replica set deleted while the controller was down, and, the store's disk
// lost a moment after a write, converges to that write once the store is
// restored from its snapshot and change log. The reconciler is in
// controller/reconciler.go; main.go only wires.
//
// Read the reconciler first: controller/reconciler.go holds the Reconcile
// method (its first step the finalizer, resource.Finalize) and
// controller/controller.go the resource and New, in package controller so
// that the failover example can run the same controller. This command only
// runs it and narrates: demo.go wires the store, the pods and the
// controller; store.go opens the store (bbolt, with the API-server layer of
// store/apistore over it) with its narrator and the shipper of its change
// log (store/changelog); process.go runs the controller as a process of its
// own would (crashed or stopped, then started again, by the last three
// steps); scenario.go plays the steps (checkpoint.go the one from the
// checkpoint, diskloss.go the restore after the disk loss); narrator.go
// tells what the store sees, and summary.go sums up. The pods are real
// processes (examples/internal/pods).
//
// Run it from the repository root:
//
//	go run ./examples/replicaset
//	go run ./examples/replicaset -replicas 4 -store /tmp/rs -v
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/internal/privatefile"
)

const description = `replicaset runs a narrated demo of a reconciliation loop. A controller keeps
a replica set's pods, which are child processes of this program, matching the
spec held in a bbolt store: it converges to -replicas pods, brings them back
after a "power failure" kills them all with SIGKILL, scales up and down, and
keeps replacing a killed pod while the store is unreachable, writing the
status once the store returns. Then the store and the controller are both
gone: the network cut, the controller crashes, and a fresh one, started
while the store is still unreachable, runs from its checkpoint file (beside
the store) and replaces a pod killed meanwhile; the store returns and
nothing is lost. Then a second replica set is deleted while the controller
is stopped: its finalizer keeps it in the store, marked, its pods running,
until the controller starts again and stops them. Last, the store's disk is
lost a moment after a scale is acknowledged: every change of the store is
shipped to a change log beside it, from which a new store is restored,
under a new identity, holding that write; the controller, started again on
it, converges to it and undoes nothing. On exit no pod is left running.
With -store, the desired state and its change log survive a restart of the
demo.`

func main() {
	replicas := flag.Int("replicas", 3, "number of pods to start with (at least 1); the demo then scales to N+2 and N-1")
	dir := flag.String("store", "", "directory of the bbolt store file, its change log and the controller's checkpoint (default: a temporary directory removed at exit)")
	httpAddr := flag.String("http", "", "serve the debug page (/debug/converge/) and Prometheus metrics (/metrics) on this address while the demo runs, e.g. 127.0.0.1:8080")
	insecure := flag.Bool("insecure-no-token", false, "serve -http on an address that is not loopback: the debug page and the metrics have no token, and show the replica sets' keys and errors to whoever reaches it")
	insecurePerms := flag.Bool(privatefile.AcceptFlag, false, "use a -store directory another user may change, with a warning; without it such a directory is refused")
	verbose := flag.Bool("v", false, "log the controller at debug level (default: warnings only)")
	demo.Main("replicaset", description, func(ctx context.Context, exe string) error {
		if *replicas < 1 {
			return fmt.Errorf("%w: -replicas %d, want at least 1", demo.ErrUsage, *replicas)
		}
		level := slog.LevelWarn
		if *verbose {
			level = slog.LevelDebug
		}
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
		_, err := Run(ctx, Config{Replicas: *replicas, StoreDir: *dir, InsecurePermissions: *insecurePerms, Executable: exe, Out: os.Stdout, Logger: logger,
			HTTPAddr: *httpAddr, InsecureNoToken: *insecure})
		if errors.Is(err, demo.ErrNotLoopback) {
			err = fmt.Errorf("%w: %w", demo.ErrUsage, err)
		}
		return err
	})
}
