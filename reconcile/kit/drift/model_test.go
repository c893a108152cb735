package drift_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/drift"
)

// The drift contract, as a model: what is expected of a key is what the
// reconciler last reported it made or observed (Reconciled), or what the
// latest poll listed, whichever came later; a key reported unsettled
// (Drifted) differs from any listing. A poll wakes exactly the keys
// whose world differs from what is expected of them (before the first
// poll, only keys reported, unless WakeOnFirstPoll), and a failed poll
// wakes nothing and changes nothing. Random sequences of operator changes
// (reported), observations (reported, the world unchanged), reconciles
// that end unsettled, hand changes (not reported), polls and failed
// polls, over keys that hold zero, one or two objects listed in any
// order, check every poll against it.
func TestEveryKeyThatDiffersFromWhatTheReconcilerLastMadeIsWokenByTheNextPoll(t *testing.T) {
	for seed := range uint64(300) {
		synctest.Test(t, func(t *testing.T) {
			m := newDriftModel(t, seed)
			t.Cleanup(m.stop)
			for range 60 {
				m.step()
			}
		})
	}
}

// modelWorld is the world of the model: each key's objects, by their
// fingerprints; a key with none has no object.
type modelWorld struct {
	mu   sync.Mutex
	objs map[string][]string
	rnd  *rand.Rand // shuffles each listing
	fail bool
}

func (w *modelWorld) list(context.Context) ([]drift.Observed, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail {
		return nil, errors.New("the world does not answer")
	}
	var out []drift.Observed
	for key, fps := range w.objs {
		for _, fp := range fps {
			out = append(out, drift.Observed{Key: key, Fingerprint: fp})
		}
	}
	w.rnd.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

type driftModel struct {
	t        *testing.T
	seed     uint64
	rnd      *rand.Rand
	world    *modelWorld
	src      *drift.Source
	woken    *woken
	stopSrc  func() error // nil while the source is not running
	failed   chan error   // what Start returned after a failed poll
	wakeAll  bool
	keys     []string
	expected map[string]string // key → its objects, canonical ("" for none)
	known    map[string]bool   // a report or a poll told what to expect
	drifting map[string]bool   // reported unsettled (Drifted) since the last poll
	steps    []string          // the sequence so far, for a failure's message
}

func newDriftModel(t *testing.T, seed uint64) *driftModel {
	rnd := rand.New(rand.NewPCG(seed, 36))
	m := &driftModel{t: t, seed: seed, rnd: rnd, woken: &woken{}, wakeAll: rnd.IntN(4) == 0,
		world:    &modelWorld{objs: map[string][]string{}, rnd: rand.New(rand.NewPCG(seed, 37))},
		keys:     []string{"dbs/a", "dbs/b", "dbs/c", "dbs/d"},
		expected: map[string]string{}, known: map[string]bool{}, drifting: map[string]bool{}}
	for _, key := range m.keys {
		m.world.objs[key] = m.objects()
	}
	m.src = newSource(t, m.world.list, drift.Options{Interval: time.Minute, PerSecond: inf, WakeOnFirstPoll: m.wakeAll})
	return m
}

var inf = math.Inf(1) // no rate limit: a poll's keys are woken at once

// objects returns zero, one or two objects' fingerprints, from few values
// so that sequences often come back to where they were.
func (m *driftModel) objects() []string {
	out := make([]string, m.rnd.IntN(3))
	for i := range out {
		out[i] = []string{"owner=app", "owner=ops"}[m.rnd.IntN(2)]
	}
	return out
}

// canonical is how the model compares a key's objects: in any order.
func canonical(fps []string) string {
	return strings.Join(slices.Sorted(slices.Values(fps)), "|")
}

func (m *driftModel) step() {
	key := m.keys[m.rnd.IntN(len(m.keys))]
	switch r := m.rnd.IntN(11); {
	case r < 3: // the reconciler changes the world and says what it made
		m.setWorld(key, m.objects())
		m.report(key, "operator")
	case r < 4: // the reconciler finds the world as it is
		m.report(key, "observe")
	case r < 5: // the reconciler changes the world, then finds it otherwise
		m.setWorld(key, m.objects())
		m.src.Drifted(key)
		m.known[key], m.drifting[key] = true, true
		m.steps = append(m.steps, "unsettled "+key)
	case r < 8: // someone changes it by hand
		fps := m.objects()
		m.setWorld(key, fps)
		m.steps = append(m.steps, fmt.Sprintf("hand %s=%v", key, fps))
	case r < 10:
		m.poll()
	default:
		m.failedPoll()
	}
}

func (m *driftModel) setWorld(key string, fps []string) {
	m.world.mu.Lock()
	defer m.world.mu.Unlock()
	m.world.objs[key] = fps
}

func (m *driftModel) report(key, what string) {
	m.world.mu.Lock()
	fps := slices.Clone(m.world.objs[key])
	m.world.mu.Unlock()
	m.rnd.Shuffle(len(fps), func(i, j int) { fps[i], fps[j] = fps[j], fps[i] })
	m.src.Reconciled(key, fps...)
	m.expected[key], m.known[key], m.drifting[key] = canonical(fps), true, false
	m.steps = append(m.steps, fmt.Sprintf("%s %s=%v", what, key, fps))
}

// poll lets the source poll once, and checks what it woke.
func (m *driftModel) poll() {
	m.steps = append(m.steps, "poll")
	want := m.drifted()
	if m.stopSrc == nil {
		m.start() // a Start polls at once
	} else {
		advance(time.Minute)
	}
	synctest.Wait()
	got := m.woken.take()
	slices.Sort(got)
	require.Equal(m.t, want, got, "seed %d, after:\n%s", m.seed, strings.Join(m.steps, "\n"))
}

// drifted returns, sorted, the keys whose world differs from what is
// expected of them, and takes the world as what is expected of each key:
// what a successful poll does.
func (m *driftModel) drifted() []string {
	m.world.mu.Lock()
	defer m.world.mu.Unlock()
	var out []string
	for _, key := range m.keys {
		now := canonical(m.world.objs[key])
		if m.drifting[key] || (m.known[key] || m.wakeAll) && now != m.expected[key] {
			out = append(out, key)
		}
		m.expected[key], m.known[key], m.drifting[key] = now, true, false
	}
	m.wakeAll = false // only the first poll wakes all
	return out
}

// failedPoll makes the next poll fail: it must wake nothing and change
// nothing; Start returns its error, and the next poll starts it again.
func (m *driftModel) failedPoll() {
	m.steps = append(m.steps, "failed poll")
	m.world.mu.Lock()
	m.world.fail = true
	m.world.mu.Unlock()
	if m.stopSrc == nil {
		m.start()
	} else {
		advance(time.Minute)
	}
	synctest.Wait()
	require.Error(m.t, <-m.failed)
	m.stopSrc = nil
	require.Empty(m.t, m.woken.take(), "seed %d: a failed poll wakes nothing", m.seed)
	m.world.mu.Lock()
	m.world.fail = false
	m.world.mu.Unlock()
}

func (m *driftModel) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.src.Start(ctx, m.woken.enqueue) }()
	m.failed = done
	m.stopSrc = func() error {
		cancel()
		return <-done
	}
}

func (m *driftModel) stop() {
	if m.stopSrc != nil {
		require.NoError(m.t, m.stopSrc())
		m.stopSrc = nil
	}
}
