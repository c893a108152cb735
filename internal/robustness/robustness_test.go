package robustness_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/converge-go/converge/internal/robustness"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// longEnv selects the long runs: more seeds and longer histories.
const longEnv = "CONVERGE_ROBUSTNESS_LONG"

// runs returns the configurations to verify each backend with: 3 seeds of
// DefaultConfig, 1 with -short, and 20 seeds of 10,000 operations with 16
// clients when CONVERGE_ROBUSTNESS_LONG is set.
func runs() []robustness.Config {
	seeds, long := 3, os.Getenv(longEnv) != ""
	switch {
	case long:
		seeds = 20
	case testing.Short():
		seeds = 1
	}
	var cfgs []robustness.Config
	for seed := range uint64(seeds) {
		cfg := robustness.DefaultConfig(seed + 1)
		if long {
			cfg.Clients, cfg.Ops = 8, 10_000
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
		for _, cfg := range runs() {
			b := backend()
			t.Run(b.Name+"/seed="+strconv.FormatUint(cfg.Seed, 10), func(t *testing.T) {
				r := robustness.Verify(t.Context(), t, b, cfg)
				s := r.Count()
				// The run must have exercised what it claims to check.
				if s.Failed == 0 || s.AmbiguousCommitted == 0 || s.Ambiguous == s.AmbiguousCommitted {
					t.Errorf("faults not exercised: %d writes failed before commit, %d ambiguous of which %d committed", s.Failed, s.Ambiguous, s.AmbiguousCommitted)
				}
				if s.Disconnects == 0 {
					t.Errorf("the watch was never disconnected and resumed")
				}
				if b.Restart != nil && !r.Restarted {
					t.Errorf("the store was not restarted")
				}
			})
		}
	}
}
