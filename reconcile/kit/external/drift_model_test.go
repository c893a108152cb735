package external_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// TestEveryHandChangeIsPutBackByTheNextPollWhateverTheOperatorDidBetween:
// over random sequences of the operator's changes (a spec written and
// reconciled into the world) and changes by hand (an object resized,
// put back to a size the operator made before, or removed), several of
// them between two polls of the kit's drift source, the world holds
// exactly the desired object after the first poll that follows them: the
// kit tells its drift source what each reconcile made, so that old → new
// (made by the operator) → old (by hand) between two polls is found too.
func TestEveryHandChangeIsPutBackByTheNextPollWhateverTheOperatorDidBetween(t *testing.T) {
	for seed := range uint64(8) {
		synctest.Test(t, func(t *testing.T) { handAndOperatorRounds(t, rand.New(rand.NewPCG(seed, 36))) })
	}
}

// handAndOperatorRounds plays rounds of random steps, each round shorter
// than the drift interval (10 s, see operator), then lets one interval
// and a second pass and checks the world.
func handAndOperatorRounds(t *testing.T, rng *rand.Rand) {
	e := newEnv(t, worldNames)
	op := e.operator()
	defer op.run(t)()
	want, made := 1, []int{1}
	e.put(want)
	e.caughtUp(op)
	e.requireOneObject(want, "created")
	var log []string
	for round := range 12 {
		for range 1 + rng.IntN(4) {
			<-time.After(time.Duration(rng.Int64N(int64(2 * time.Second))))
			synctest.Wait()
			switch objs := e.fake.Objects(); {
			case rng.IntN(3) == 0:
				want = 1 + rng.IntN(5)
				e.put(want)
				e.caughtUp(op)
				made = append(made, want)
				log = append(log, fmt.Sprint("operator made ", want))
			case len(objs) == 0:
				log = append(log, "nothing to change by hand")
			case rng.IntN(3) == 0:
				e.fake.Edit(objs[0].Name, nil)
				log = append(log, "removed by hand")
			default:
				size := made[rng.IntN(len(made))] // often a size the operator made before
				if rng.IntN(3) == 0 {
					size = 6 + rng.IntN(3) // a size the operator never made
				}
				e.fake.Edit(objs[0].Name, &vmSpec{Size: size})
				log = append(log, fmt.Sprint("resized by hand to ", size))
			}
		}
		<-time.After(11 * time.Second)
		e.caughtUp(op)
		e.requireOneObject(want, fmt.Sprintf("round %d: %v", round, log))
	}
}
