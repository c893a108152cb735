package convergeprom_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/observe/convergeprom"
	"github.com/converge-go/converge/store"
)

const refusedHelp = `# HELP converge_refused_keys_total Keys handed to the controller (by a source, a mapper or Enqueue) outside its view and refused, never reconciled
# TYPE converge_refused_keys_total counter
`

// TestRefusedKeysAreCountedPerController: converge_refused_keys_total of
// an instrumented controller is 0 from the start and counts each key
// handed in outside its view (another prefix, not a store key), not the
// keys of its view; another controller's series is apart.
func TestRefusedKeysAreCountedPerController(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := convergeprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	opts := reconcile.Options[string]{Name: "databases", Prefix: "databases/"}
	convergeprom.Instrument(m, &opts)
	m.Controller("roles", convergeprom.ControllerOptions{})
	rec := reconcile.ReconcilerFunc[string](func(context.Context, reconcile.Request[string]) (reconcile.Result, error) {
		return reconcile.Result{}, nil
	})
	c, err := reconcile.New(store.NewMemory[string](), rec, opts)
	if err != nil {
		t.Fatal(err)
	}
	requireSeries(t, reg, refusedHelp+`converge_refused_keys_total{controller="databases"} 0
converge_refused_keys_total{controller="roles"} 0
`, "converge_refused_keys_total")
	for _, key := range []string{"roles/app", "roles/app", "", "databases/\x00"} {
		if err := c.Enqueue(key); !errors.Is(err, reconcile.ErrInvalid) {
			t.Fatalf("Enqueue(%q) = %v, want ErrInvalid", key, err)
		}
	}
	if err := c.Enqueue("databases/app"); err != nil {
		t.Fatal(err)
	}
	requireSeries(t, reg, refusedHelp+`converge_refused_keys_total{controller="databases"} 4
converge_refused_keys_total{controller="roles"} 0
`, "converge_refused_keys_total")
}
