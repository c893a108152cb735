package robustness

import (
	"fmt"
	"time"
)

// Config shapes a run.
type Config struct {
	// Clients is the number of concurrent clients (at least 1).
	Clients int
	// Keys is the number of keys they share (1 to MaxKeys).
	Keys int
	// Ops is the number of recorded operations across all clients (at
	// least Clients).
	Ops int
	// Seed seeds the clients' choices and the faults.
	Seed uint64
	// FailBeforeCommit and FailAfterCommit are how often, as
	// probabilities, a write fails before reaching the store, or reaches
	// it and loses its response; the faults fire at counts drawn from
	// Seed, one in round(1/p) (see NewFaults).
	FailBeforeCommit float64
	FailAfterCommit  float64
	// DisconnectEvery makes the watcher stop and resume its watch after
	// every so many events (0: never).
	DisconnectEvery int
	// SilentOutage puts the store through a silent outage (see
	// faultstore.Silent) from a third to a half of the operations: the clients'
	// calls fail before reaching the store, and the watch stays open and
	// delivers nothing until it ends, then everything it held back.
	SilentOutage bool
	// CheckTimeout bounds the linearizability check (0: no limit). A check
	// that does not finish in time fails the test: a history too hard to
	// check proves nothing.
	CheckTimeout time.Duration
}

// DefaultConfig is the run the tests use by default: 8 clients on 4 keys,
// 2,000 operations, one write in 20 failing before commit and one in 20
// losing its response, the watch disconnected every 50 events, and a
// silent outage.
func DefaultConfig(seed uint64) Config {
	return Config{
		Clients:          8,
		Keys:             4,
		Ops:              2000,
		Seed:             seed,
		FailBeforeCommit: 0.05,
		FailAfterCommit:  0.05,
		DisconnectEvery:  50,
		SilentOutage:     true,
	}
}

func (c Config) validate() error {
	switch {
	case c.Clients < 1:
		return fmt.Errorf("%w: %d clients, want at least 1", ErrConfig, c.Clients)
	case c.Keys < 1 || c.Keys > MaxKeys:
		return fmt.Errorf("%w: %d keys, want 1 to %d", ErrConfig, c.Keys, MaxKeys)
	case c.Ops < c.Clients:
		return fmt.Errorf("%w: %d operations for %d clients, want at least one each", ErrConfig, c.Ops, c.Clients)
	case c.CheckTimeout < 0:
		return fmt.Errorf("%w: check timeout %v, want 0 (no limit) or more", ErrConfig, c.CheckTimeout)
	case c.DisconnectEvery < 0:
		return fmt.Errorf("%w: disconnect every %d events, want 0 or more", ErrConfig, c.DisconnectEvery)
	}
	return checkProbabilities(c.FailBeforeCommit, c.FailAfterCommit)
}
