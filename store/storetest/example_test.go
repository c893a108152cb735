package storetest_test

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/storetest"
)

// A backend's test file runs the whole suite with one call; each sub-test
// gets a fresh store from the factory, which registers its cleanup.
func ExampleRun() {
	_ = func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store[*storetest.Value] {
			s := store.NewMemory[*storetest.Value]()
			t.Cleanup(func() { s.Close() })
			return s
		})
	}
}

// RunWith adapts the suite to a backend; here one without a lag limit on
// watchers, whose read-modify-write test is made heavier.
func ExampleRunWith() {
	_ = func(t *testing.T, newStore func(*testing.T) store.Store[*storetest.Value]) {
		storetest.RunWith(t, newStore, storetest.Options{
			SkipSlowWatcher: true,
			Goroutines:      16,
			Increments:      50,
		})
	}
}
