package robustness_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

func TestBadInput(t *testing.T) {
	good := robustness.DefaultConfig(1)
	with := func(f func(*robustness.Config)) robustness.Config {
		c := good
		f(&c)
		return c
	}
	configs := map[string]robustness.Config{
		"no clients":       with(func(c *robustness.Config) { c.Clients = 0 }),
		"no keys":          with(func(c *robustness.Config) { c.Keys = 0 }),
		"too many keys":    with(func(c *robustness.Config) { c.Keys = robustness.MaxKeys + 1 }),
		"too few ops":      with(func(c *robustness.Config) { c.Ops = c.Clients - 1 }),
		"negative faults":  with(func(c *robustness.Config) { c.FailBeforeCommit = -0.1 }),
		"faults over 1":    with(func(c *robustness.Config) { c.FailBeforeCommit, c.FailAfterCommit = 0.6, 0.6 }),
		"NaN faults":       with(func(c *robustness.Config) { c.FailAfterCommit = nan() }),
		"negative disconn": with(func(c *robustness.Config) { c.DisconnectEvery = -1 }),
	}
	for name, cfg := range configs {
		if _, err := robustness.Record(t.Context(), t, memoryBackend(), cfg); !errors.Is(err, robustness.ErrConfig) {
			t.Errorf("%s: Record = %v, want ErrConfig", name, err)
		}
	}
	if _, err := robustness.Record(t.Context(), t, robustness.Backend{Name: "no open"}, good); !errors.Is(err, robustness.ErrConfig) {
		t.Errorf("backend without Open: Record = %v, want ErrConfig", err)
	}
	for name, keys := range map[string][]string{
		"none":      nil,
		"too many":  robustness.Keys(robustness.MaxKeys + 1),
		"duplicate": {"a", "a"},
		"invalid":   {""},
	} {
		if _, err := robustness.NewHistory(keys); !errors.Is(err, robustness.ErrConfig) {
			t.Errorf("NewHistory with %s keys = %v, want ErrConfig", name, err)
		}
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

func TestRecorderRefusesUnrecordedKey(t *testing.T) {
	h, err := robustness.NewHistory(robustness.Keys(2))
	if err != nil {
		t.Fatal(err)
	}
	m := store.NewMemory[robustness.Value]()
	defer m.Close()
	rec := h.Client(m)
	ctx := t.Context()
	if _, err := rec.Create(ctx, "elsewhere", robustness.Value{}); !errors.Is(err, robustness.ErrUnrecordedKey) || !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Create on an unrecorded key = %v, want ErrUnrecordedKey and store.ErrInvalid", err)
	}
	if _, err := rec.Get(ctx, ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Get of the empty key = %v, want store.ErrInvalid", err)
	}
	if rev, _ := m.Revision(ctx); rev != 0 || len(h.Ops()) != 0 {
		t.Errorf("refused calls reached the store (revision %d) or the history (%d ops)", rev, len(h.Ops()))
	}
}

// NewFaults fails writes before they reach the store (ErrNotSent: no
// effect), or lets them reach it and loses the response, keeping the
// store's real answer out of errors.Is but in the error.
func TestFaultsFailWritesUnsentOrLoseTheirResponse(t *testing.T) {
	ctx := t.Context()
	key := robustness.Keys(1)[0]
	v := robustness.Value{Client: 1, Seq: 1}

	m := store.NewMemory[robustness.Value]()
	defer m.Close()
	before, err := robustness.NewFaults(m, 1, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := before.Create(ctx, key, v); !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, faultstore.ErrNotSent) {
		t.Errorf("Create failing before commit = %v, want ErrUnavailable and ErrNotSent", err)
	}
	if _, err := m.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a write failed before commit reached the store: Get = %v", err)
	}

	after, err := robustness.NewFaults(m, 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = after.Create(ctx, key, v)
	lost, ok := errors.AsType[*faultstore.LostResponseError[robustness.Value]](err)
	if !ok || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, faultstore.ErrNotSent) {
		t.Fatalf("Create failing after commit = %v, want a LostResponseError matching only ErrUnavailable", err)
	}
	got, err := m.Get(ctx, key)
	if err != nil || got.Value != v {
		t.Fatalf("a write failed after commit did not reach the store: Get = %+v, %v", got, err)
	}
	if lost.Object != got || lost.Err != nil {
		t.Errorf("lost response = %+v, %v, want %+v, nil", lost.Object, lost.Err, got)
	}
	_, err = after.Create(ctx, key, v)
	if lost, ok := errors.AsType[*faultstore.LostResponseError[robustness.Value]](err); !ok || !errors.Is(lost.Err, store.ErrExists) || errors.Is(err, store.ErrExists) {
		t.Errorf("lost response of a failing Create = %v, want outcome %v hidden from errors.Is", err, store.ErrExists)
	}
	if _, err := robustness.NewFaults(m, 1, 0.6, 0.6); !errors.Is(err, robustness.ErrConfig) {
		t.Errorf("NewFaults with probabilities summing above 1 = %v, want ErrConfig", err)
	}
}

// Whatever the seed, NewFaults fails one of the first round(1/before)
// writes before it reaches the store, and loses the answer of one of the
// first round(1/after) writes the store applied and of one of the first
// round(1/after) it refused: a run long enough has each kind of fault by
// construction, not by chance.
func TestFaultsFireWithinTheirMeanGapForEverySeed(t *testing.T) {
	const p, every = 0.05, 20
	ctx := t.Context()
	v := robustness.Value{Client: 1, Seq: 1}
	for seed := range uint64(50) {
		m := store.NewMemory[robustness.Value]()
		f, err := robustness.NewFaults(m, seed, p, p)
		if err != nil {
			t.Fatal(err)
		}
		// Creates of new keys until the store applied every of them, then
		// of an existing key until it refused every.
		var writes, unsent int
		lost := map[bool]int{}     // by refused
		answered := map[bool]int{} // by refused
		for _, refused := range []bool{false, true} {
			for answered[refused] < every {
				key := "k0"
				if !refused {
					key = fmt.Sprintf("k%d", writes)
				}
				_, err := f.Create(ctx, key, v)
				if writes++; writes <= every && errors.Is(err, faultstore.ErrNotSent) {
					unsent++
				}
				l, isLost := errors.AsType[*faultstore.LostResponseError[robustness.Value]](err)
				if isLost {
					lost[refused]++
					err = l.Err
				}
				if err == nil || errors.Is(err, store.ErrExists) {
					answered[refused]++
				}
			}
		}
		if unsent == 0 || lost[false] == 0 || lost[true] == 0 {
			t.Errorf("seed %d: %d of the first %d writes unsent; answers lost of %d of the first %d applied and of %d of the first %d refused; want at least one each",
				seed, unsent, every, lost[false], every, lost[true], every)
		}
		_ = m.Close()
	}
}
