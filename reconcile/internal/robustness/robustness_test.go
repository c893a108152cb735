package robustness_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests, with one narrow
// exception, the same as store/etcdstore's: the HTTP connections between
// the members of an embedded etcd cluster. A member's close shuts its peer
// HTTP server down without forcing its active connections closed; each ends
// by itself within etcd's peer read timeout (5 s) after the last member
// closes. The runs over httpstore open HTTP connections of their own: each
// test's cleanup closes its httptest server (which closes every connection
// and waits until every handler has returned, so a stuck handler hangs the
// test rather than hiding here) and its client transport's idle
// connections. The ignore can hide only a connection loop of net/http
// itself, never a goroutine of a handler, a watch or a store.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
	)
}

// longEnv selects the long runs: more seeds and longer histories.
const longEnv = "CONVERGE_ROBUSTNESS_LONG"

// runs returns the configurations to verify a backend with: seeds seeds of
// DefaultConfig, 1 with -short, and longSeeds seeds of 10,000 operations
// when CONVERGE_ROBUSTNESS_LONG is set.
func runs(seeds, longSeeds int) []robustness.Config {
	long := os.Getenv(longEnv) != ""
	switch {
	case long:
		seeds = longSeeds
	case testing.Short():
		seeds = 1
	}
	var cfgs []robustness.Config
	for seed := range uint64(seeds) {
		cfg := robustness.DefaultConfig(seed + 1)
		if long {
			cfg.Ops = 10_000
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs
}

// memoryBackend is the in-memory store.
func memoryBackend() robustness.Backend {
	return robustness.Backend{
		Name: "memory",
		Open: func(t testing.TB) (store.Store[robustness.Value], error) {
			m := store.NewMemory[robustness.Value]()
			t.Cleanup(func() { _ = m.Close() })
			return m, nil
		},
	}
}

// boltBackend is the bbolt store in a new file, restarted by closing and
// reopening the file.
func boltBackend() robustness.Backend {
	var path string
	open := func(t testing.TB) (store.Store[robustness.Value], error) {
		s, err := boltstore.Open[robustness.Value](path)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, nil
	}
	return robustness.Backend{
		Name: "bolt",
		Open: func(t testing.TB) (store.Store[robustness.Value], error) {
			path = filepath.Join(t.TempDir(), "store.db")
			return open(t)
		},
		Restart: func(t testing.TB, s store.Store[robustness.Value]) (store.Store[robustness.Value], error) {
			if err := s.(*boltstore.Store[robustness.Value]).Close(); err != nil {
				return nil, err
			}
			return open(t)
		},
	}
}

func TestRobustness(t *testing.T) {
	for _, backend := range []func() robustness.Backend{memoryBackend, boltBackend} {
		for _, cfg := range runs(3, 20) {
			b := backend()
			t.Run(b.Name+"/seed="+strconv.FormatUint(cfg.Seed, 10), func(t *testing.T) {
				r := robustness.Verify(t.Context(), t, b, cfg)
				checkExercised(t, b, r)
			})
		}
	}
}

// checkExercised checks that a run exercised what it claims to check:
// faults of both kinds, with ambiguous writes that committed and some that
// did not, watch disconnections, and the backend's restart or disruption.
// The fault plan fires at counts drawn from the seed (robustness.NewFaults,
// robustness.Schedule), the watcher disconnects after a count of events,
// and the restart and disruption come at a count of operations: each
// holds whatever the scheduling once the run has made that many writes of
// each kind and changes, and the messages say how many it made.
func checkExercised(t *testing.T, b robustness.Backend, r *robustness.Report) {
	t.Helper()
	s, cfg := r.Count(), r.Config
	within := func(p float64) int { return robustness.ScheduleFor(p, 0, 0).Every() }
	applied, refused := appliedAndRefused(r.Ops)
	if s.FailedWrites == 0 {
		t.Errorf("no write failed before reaching the store: the plan fails one of the first %d writes; the run made %d", within(cfg.FailBeforeCommit), s.Writes)
	}
	if s.AmbiguousCommitted == 0 {
		t.Errorf("no ambiguous write committed: the plan loses the answer of one of the first %d writes the store applied; it applied %d", within(cfg.FailAfterCommit), applied)
	}
	if s.AmbiguousNotCommitted == 0 {
		t.Errorf("every ambiguous write committed: the plan loses the answer of one of the first %d writes the store refused; it refused %d", within(cfg.FailAfterCommit), refused)
	}
	if s.Disconnects == 0 {
		t.Errorf("the watch was never disconnected and resumed: the watcher disconnects after %d events of a watch; it received %d", cfg.DisconnectEvery, s.Events)
	}
	if b.Restart != nil && !r.Restarted {
		t.Errorf("the store was not restarted")
	}
	if b.Disrupt != nil && !r.Disrupted {
		t.Errorf("the store was not disrupted")
	}
}

// appliedAndRefused counts the writes the store applied and those it
// refused on their precondition, lost answers included.
func appliedAndRefused(ops []robustness.Op) (applied, refused int) {
	for _, op := range ops {
		out := op.Output
		if out.Result == robustness.ResultUnknown && op.Actual != nil {
			out = *op.Actual
		}
		switch {
		case !op.Input.Op.IsWrite():
		case out.Result == robustness.ResultOK:
			applied++
		case out.Result == robustness.ResultExists, out.Result == robustness.ResultConflict, out.Result == robustness.ResultNotFound:
			refused++
		}
	}
	return applied, refused
}
