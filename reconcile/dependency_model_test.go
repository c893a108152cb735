package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// depWorld is the model of controllers of one process sharing
// dependencies: each dependency's world goes down and back at random,
// controllers start and stop at random phases, keys change, and some
// reconcilers blame the dependency (dependency.Down) while others fail
// plainly. The process's dependency state is read through a Set of the
// test's own, holding the same dependencies.
type depWorld struct {
	t      *testing.T
	s      store.Store[*item]
	deps   []*dependency.Dependency
	down   []atomic.Bool // per dependency, its world
	states *dependency.Set
	ctrls  []*depCtrl
	wants  int
}

type depCtrl struct {
	c       *Controller[*item]
	name    string
	members []int // indexes into depWorld.deps, in Options.Dependencies' order
	stop    func()
}

var errWorldDown = errors.New("connection refused")

// reconciler returns the reconciler of a controller of members: it fails
// while one of their worlds is down (marked with dependency.Down if
// blames), and reports a reconcile that started strictly after the
// instant one of them was down, while it still was.
func (w *depWorld) reconciler(members []int, blames bool) Reconciler[*item] {
	return ReconcilerFunc[*item](func(_ context.Context, req Request[*item]) (Result, error) {
		now := time.Now()
		states := w.states.States()
		for _, i := range members {
			if st := states[i]; st.Down && now.After(st.Since) {
				w.t.Errorf("%s reconciled at %v, %s after %s was down", req.Key, now, now.Sub(st.Since), st.Name)
			}
		}
		for _, i := range members {
			if w.down[i].Load() {
				if blames {
					return Result{}, dependency.Down(w.deps[i].Name, errWorldDown)
				}
				return Result{}, fmt.Errorf("insert: %w", errWorldDown)
			}
		}
		return Result{}, nil
	})
}

func newDepWorld(t *testing.T, r *rand.Rand) *depWorld {
	w := &depWorld{t: t, s: store.NewMemory[*item](), down: make([]atomic.Bool, 2)}
	for i, name := range []string{"postgres", "broker"} {
		i := i
		w.deps = append(w.deps, &dependency.Dependency{Name: name, Interval: time.Duration(1000+500*i) * time.Millisecond,
			FailureThreshold: 1 + r.IntN(3), Check: func(context.Context) error {
				if w.down[i].Load() {
					return errWorldDown
				}
				return nil
			}})
	}
	states, err := dependency.NewSet(w.deps...)
	require.NoError(t, err)
	w.states = states
	for k, members := range [][]int{{0}, {0, 1}, {1, 0}, {1}} {
		name := fmt.Sprintf("c%d", k)
		deps := make([]*dependency.Dependency, len(members))
		for j, i := range members {
			deps[j] = w.deps[i]
		}
		c, err := New(w.s, w.reconciler(members, k%2 == 0), Options[*item]{Name: name, Prefix: name + "/", Workers: 2,
			Dependencies: deps, RateLimiter: queue.NewExponential[string](100*time.Millisecond, time.Hour, 0)})
		require.NoError(t, err)
		w.ctrls = append(w.ctrls, &depCtrl{c: c, name: name, members: members})
	}
	return w
}

// step does one random thing and says what.
func (w *depWorld) step(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		c := w.ctrls[r.IntN(len(w.ctrls))]
		if c.stop == nil {
			c.stop = start(w.t, c.c)
			return "start " + c.name
		}
		c.stop()
		c.stop = nil
		return "stop " + c.name
	case 1:
		i := r.IntN(len(w.deps))
		was := w.down[i].Load()
		w.down[i].Store(!was)
		return fmt.Sprintf("%s world down: %v", w.deps[i].Name, !was)
	case 2, 3:
		c := w.ctrls[r.IntN(len(w.ctrls))]
		w.wants++
		key := fmt.Sprintf("%s/k%d", c.name, r.IntN(3))
		put(w.t, w.s, key, &item{Want: w.wants})
		return "change " + key
	default:
		d := time.Duration(r.IntN(2000)) * time.Millisecond
		advance(d)
		return fmt.Sprint("advance ", d)
	}
}

// verify checks that every controller, running or not, reports the
// process's state of each of its dependencies, and that a running one is
// unready exactly while one is down.
func (w *depWorld) verify(after string) {
	t := w.t
	t.Helper()
	states := w.states.States()
	for _, c := range w.ctrls {
		var want []dependency.State
		for _, i := range c.members {
			want = append(want, states[i])
		}
		require.Equal(t, want, c.c.Health().Dependencies, "%s, after %s", c.name, after)
		if c.stop == nil {
			continue
		}
		down := slices.ContainsFunc(want, func(st dependency.State) bool { return st.Down })
		if err := c.c.Ready(); down {
			require.ErrorIs(t, err, dependency.ErrDown, "%s, after %s", c.name, after)
		} else {
			require.NoError(t, err, "%s, after %s", c.name, after)
		}
	}
}

// Controllers sharing dependencies, started and stopped at random phases
// through random outages, changes and blames, report at every instant the
// process's one state of each dependency, are unready exactly while one of
// theirs is down, start no reconcile after the instant one of theirs is
// down, and once every world is back converge every key within one check
// of the slowest dependency. (Each controller checking its own copy of a
// dependency, as before, fails this at the first outage.)
func TestControllersSharingDependenciesFollowTheProcessStateWhateverHappens(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 0xdeb))
				w := newDepWorld(t, r)
				defer func() {
					for _, c := range w.ctrls {
						if c.stop != nil {
							c.stop()
						}
					}
				}()
				for range 80 {
					did := w.step(r)
					synctest.Wait()
					w.verify(did)
				}
				w.converge()
			})
		})
	}
}

// converge takes every world down until every dependency is found down,
// changes a key of each controller meanwhile, then brings every world
// back: every key, held or failed, whatever backoff it had grown, must be
// reconciled successfully within one check of the slowest dependency.
func (w *depWorld) converge() {
	t := w.t
	for i := range w.down {
		w.down[i].Store(true)
	}
	for _, c := range w.ctrls {
		if c.stop == nil {
			c.stop = start(t, c.c)
		}
		w.wants++
		put(t, w.s, c.name+"/k0", &item{Want: w.wants})
	}
	advance(dependency.DefaultFailureThreshold*1500*time.Millisecond + time.Millisecond)
	synctest.Wait()
	w.verify("the last outage")
	require.ErrorIs(t, w.states.Err(), dependency.ErrDown)
	for i := range w.down {
		w.down[i].Store(false)
	}
	advance(1500 * time.Millisecond)
	synctest.Wait()
	w.verify("recovery")
	for _, c := range w.ctrls {
		for _, k := range c.c.Snapshot() {
			require.Equal(t, Success, k.LastOutcome, "%s: not reconciled within one check of recovery", k.Key)
		}
	}
}
