package pods

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// PodEnv, set to "1" in the environment, runs this binary as a pod instead
// of the demo: the Supervisor starts pods that way, and IsPod reports it.
const PodEnv = "CONVERGE_REPLICASET_POD"

// IsPod reports whether this process was started as a pod.
func IsPod() bool { return os.Getenv(PodEnv) == "1" }

// RunPod is the pod mode. With a command, the process becomes that command
// (execve keeps the pid the supervisor watches). Without one, it blocks until
// SIGTERM or SIGINT and exits 0; SIGKILL ends it like any process. It
// returns the exit code.
func RunPod(command []string) int {
	if len(command) > 0 {
		path, err := exec.LookPath(command[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "pod:", err)
			return 127
		}
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, PodEnv+"=") })
		err = syscall.Exec(path, command, env)
		fmt.Fprintln(os.Stderr, "pod: exec:", err)
		return 126
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	return 0
}
