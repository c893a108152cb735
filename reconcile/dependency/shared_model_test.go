package dependency_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/dependency"
)

// modelDep is what the contract says of one dependency shared by several
// Sets: its state, updated by its checks (as the check returns) and by
// blames, and when its checks began (they run once per Interval from
// then, while any Set holding it runs).
type modelDep struct {
	dep       *dependency.Dependency
	interval  time.Duration
	threshold int
	worldDown bool

	state    dependency.State
	running  int       // Sets running with it
	began    time.Time // when running last went from 0 to 1
	checks   int       // since began
	inFlight int
}

// sharedModel is several Sets sharing dependencies, run, stopped and
// blamed at random, and the state the contract gives each dependency.
type sharedModel struct {
	t    *testing.T
	mu   sync.Mutex
	deps []*modelDep
	sets []*modelSet
}

type modelSet struct {
	set     *dependency.Set
	members []int // indexes into sharedModel.deps, in the Set's order
	stop    func()
	wasDown bool            // what the latest Watch said
	changed <-chan struct{} // and its channel
	told    bool            // the answer has changed since: changed must be closed
}

// downChanged marks the Sets whose answer to Watch has changed since they
// asked. m.mu is held.
func (m *sharedModel) downChanged() {
	for _, s := range m.sets {
		if m.anyDown(s) != s.wasDown {
			s.told = true
		}
	}
}

// anyDown reports whether a dependency of s is down. m.mu is held.
func (m *sharedModel) anyDown(s *modelSet) bool {
	return slices.ContainsFunc(s.members, func(i int) bool { return m.deps[i].state.Down })
}

// check is dependency i's Check: it fails at once while the world is
// down, and updates the model as the contract says the check's result
// will.
func (m *sharedModel) check(i int) func(context.Context) error {
	return func(context.Context) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		d, now := m.deps[i], time.Now()
		if d.inFlight++; d.inFlight > 1 {
			m.t.Errorf("%s: two checks at once", d.state.Name)
		}
		defer func() { d.inFlight-- }()
		if d.running == 0 {
			m.t.Errorf("%s: checked while no Set runs with it", d.state.Name)
		}
		if off := now.Sub(d.began) % d.interval; off != 0 {
			m.t.Errorf("%s: checked %v off its Interval", d.state.Name, off)
		}
		d.checks++
		d.state.Checked = now
		if !d.worldDown {
			d.state.Failures = 0
			if d.state.Down {
				d.state.Down, d.state.Since = false, now
				m.downChanged()
			}
			return nil
		}
		m.failed(d, errRefused.Error(), d.threshold, now)
		return errRefused
	}
}

// failed counts a failure of d. m.mu is held.
func (m *sharedModel) failed(d *modelDep, msg string, threshold int, now time.Time) {
	d.state.Failures++
	d.state.LastError = msg
	if !d.state.Down && d.state.Failures >= threshold {
		d.state.Down, d.state.Since = true, now
		m.downChanged()
	}
}

func (m *sharedModel) run(s *modelSet) {
	m.mu.Lock()
	for _, i := range s.members {
		if d := m.deps[i]; d.running == 0 {
			d.running, d.began, d.checks = 1, time.Now(), 0
		} else {
			d.running++
		}
	}
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.set.Run(ctx) }()
	s.stop = func() {
		cancel()
		require.NoError(m.t, <-done)
		m.mu.Lock()
		for _, i := range s.members {
			m.deps[i].running--
		}
		m.mu.Unlock()
	}
}

// step does one random thing.
func (m *sharedModel) step(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0:
		s := m.sets[r.IntN(len(m.sets))]
		if s.stop == nil {
			m.run(s)
			return "run a set"
		}
		s.stop()
		s.stop = nil
		return "stop a set"
	case 1:
		d := m.deps[r.IntN(len(m.deps))]
		m.mu.Lock()
		d.worldDown = !d.worldDown
		m.mu.Unlock()
		return fmt.Sprintf("%s world down: %v", d.state.Name, d.worldDown)
	case 2:
		s, i := m.sets[r.IntN(len(m.sets))], r.IntN(len(m.deps))
		d := m.deps[i]
		m.mu.Lock()
		holds := slices.Contains(s.members, i)
		if holds {
			m.failed(d, "blamed", 1, time.Now())
		}
		m.mu.Unlock()
		require.Equal(m.t, holds, s.set.Blame(dependency.Down(d.state.Name, fmt.Errorf("blamed"))))
		return "blame " + d.state.Name
	default:
		d := time.Duration(r.IntN(2500)) * time.Millisecond
		advance(d)
		return fmt.Sprint("advance ", d)
	}
}

// verify checks every Set against the model.
func (m *sharedModel) verify(t *testing.T, after string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for _, d := range m.deps {
		if d.running > 0 {
			require.Equal(t, int(now.Sub(d.began)/d.interval)+1, d.checks, "%s: after %s: not one check per Interval", d.state.Name, after)
		}
	}
	for si, s := range m.sets {
		states := s.set.States()
		for k, i := range s.members {
			require.Equal(t, m.deps[i].state, states[k], "set %d, after %s", si, after)
		}
		anyDown := m.anyDown(s)
		require.Equal(t, anyDown, s.set.Down(), "set %d, after %s", si, after)
		if anyDown {
			require.ErrorIs(t, s.set.Err(), dependency.ErrDown)
		} else {
			require.NoError(t, s.set.Err())
		}
		if s.told {
			requireClosed(t, s.changed)
		} else {
			requireOpen(t, s.changed)
		}
		s.wasDown, s.changed = s.set.Watch()
		s.told = false
		require.Equal(t, anyDown, s.wasDown)
	}
}

// Sets sharing dependencies, run and stopped at random phases, with
// outages and blames through any of them, see at every instant the one
// state the contract gives each dependency; each dependency is checked
// once per Interval from when the first Set holding it runs, never twice
// at once and never while none runs; every Set's Watch is told exactly
// when its answer changes. (Dependencies checked apart by each Set, as
// each controller once did, fail this at their first outage.)
func TestSharedDependenciesFollowTheirModelWhateverTheSetsDo(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runSharedModel(t, rand.New(rand.NewPCG(seed, 0x5eed)), 120)
			})
		})
	}
}

func runSharedModel(t *testing.T, r *rand.Rand, steps int) {
	m := &sharedModel{t: t}
	for i, name := range []string{"postgres", "broker"} {
		d := &modelDep{interval: time.Duration(700+300*i) * time.Millisecond, threshold: 1 + r.IntN(3)}
		d.dep = &dependency.Dependency{Name: name, Check: m.check(i), Interval: d.interval, FailureThreshold: d.threshold}
		d.state = dependency.State{Name: name, Since: time.Now()}
		m.deps = append(m.deps, d)
	}
	for _, members := range [][]int{{0}, {1, 0}, {0, 1}, {1}} {
		deps := make([]*dependency.Dependency, len(members))
		for k, i := range members {
			deps[k] = m.deps[i].dep
		}
		set, err := dependency.NewSet(deps...)
		require.NoError(t, err)
		s := &modelSet{set: set, members: members}
		s.wasDown, s.changed = set.Watch()
		m.sets = append(m.sets, s)
	}
	defer func() {
		for _, s := range m.sets {
			if s.stop != nil {
				s.stop()
			}
		}
	}()
	for range steps {
		did := m.step(r)
		synctest.Wait()
		m.verify(t, did)
	}
}
