package externaltest

import (
	"errors"
	"fmt"
	"testing"
)

// Trial is one run of a crash test, on a world and a store of its own:
// it makes them, runs the scenario with its steps made through f (World
// wrapped by WithFaults, the store by Store) and returns recover, the
// check after the crash, which runs the operator again as a restarted
// process (without faults) and checks what it guarantees (no leak, no
// duplicate, no person asked), and the scenario's error.
type Trial func(t *testing.T, f *Faults) (recover func(t *testing.T), err error)

// EveryCrash runs trial once without faults, to count the scenario's
// steps, then once per step and side of it, each in a subtest of its
// own named for the crash: the process dies before the step's effect,
// or after it and before its answer, then recovers. A scenario that does
// not reach the crash, or ends without the crash's error, fails.
func EveryCrash(t *testing.T, trial Trial) {
	t.Helper()
	count := &Faults{}
	recover, err := trial(t, count)
	if err != nil {
		t.Fatalf("externaltest: the scenario fails without faults: %v", err)
	}
	recover(t)
	steps := count.Steps()
	if len(steps) == 0 {
		t.Fatal("externaltest: the scenario made no step through Faults")
	}
	for _, s := range steps {
		for _, after := range []bool{false, true} {
			side := "before"
			if after {
				side = "after"
			}
			t.Run(fmt.Sprintf("crash %s %v", side, s), func(t *testing.T) {
				f := &Faults{At: s.N, After: after}
				recover, err := trial(t, f)
				switch {
				case !f.Crashed():
					t.Fatalf("the scenario never reached step %v", s)
				case !errors.Is(err, ErrCrash):
					t.Fatalf("the scenario ended with %v, not the crash", err)
				}
				recover(t)
			})
		}
	}
}
