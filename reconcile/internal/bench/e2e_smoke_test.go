package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/converge-go/converge/store"
)

// TestEveryE2EImplementationConvergesEachObjectWithOneStatusWrite runs
// every end-to-end implementation over 1,000 objects and checks that each
// object converged with exactly one status write, and that the frameworks
// also reconciled each object after its write came back through the watch.
func TestEveryE2EImplementationConvergesEachObjectWithOneStatusWrite(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []store.MemoryOption
	}{
		{name: "default"},
		// A tiny history and watch lag make watches lag and fall off the
		// history, so the frameworks resume and re-list mid-run.
		{name: "tiny-history", opts: []store.MemoryOption{store.WithHistory(64), store.WithWatchLag(16)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, impl := range E2EImpls() {
				t.Run(impl.Name, func(t *testing.T) { testE2E(t, impl, c.opts) })
			}
		})
	}
}

func testE2E(t *testing.T, impl E2EImpl, opts []store.MemoryOption) {
	const objects, workers = 1000, 8
	ctx := context.Background()
	s := store.NewMemory[*Pair](opts...)
	defer s.Close()
	keys := NewKeys(objects)
	if err := Populate(ctx, s, keys); err != nil {
		t.Fatal(err)
	}
	r, err := impl.Run(s, keys, workers)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckConverged(ctx, s, keys); err != nil {
		t.Fatal(err)
	}
	if r.Writes != objects {
		t.Errorf("%d status writes, want %d", r.Writes, objects)
	}
	if rev, err := s.Revision(ctx); err != nil || rev != 2*objects {
		t.Errorf("store at revision %d (%v), want %d: one create and one status write per object", rev, err, 2*objects)
	}
	if r.Converged <= 0 || r.Settled < r.Converged {
		t.Errorf("converged after %v and settled after %v", r.Converged, r.Settled)
	}
	if r.Mallocs == 0 {
		t.Error("no allocations counted")
	}
	if impl.Name == "store-only" {
		if r.Reconciles != objects || r.Lists != 0 || r.Watches != 0 {
			t.Errorf("store-only: %d reconciles, %d lists, %d watches; want %d, 0, 0", r.Reconciles, r.Lists, r.Watches, objects)
		}
		return
	}
	switch {
	case strings.HasPrefix(impl.Name, "converge-own-writes"), strings.HasPrefix(impl.Name, "converge-traced"):
		// The controller knows its own writes' echoes: one reconcile per
		// object, more only after a re-list.
		if r.Reconciles < objects {
			t.Errorf("%d reconciles, want at least %d", r.Reconciles, objects)
		}
	case r.Reconciles < 2*objects:
		t.Errorf("%d reconciles, want at least %d (a write and its echo per object)", r.Reconciles, 2*objects)
	}
	if r.Lists < 1 || r.Watches < 1 {
		t.Errorf("%d lists and %d watches, want at least one of each", r.Lists, r.Watches)
	}
	t.Logf("%d reconciles, %d lists, %d watches", r.Reconciles, r.Lists, r.Watches)
}
