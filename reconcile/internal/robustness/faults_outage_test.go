package robustness_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// During a silent outage of the store NewFaults returns, writes fail before reaching the store
// (ErrNotSent: the model requires that they had no effect), reads fail,
// and an open watch stays open and delivers nothing; afterwards it
// delivers what it held back, in order. In a SilentHang outage a write
// hangs until its context ends and writes nothing.
func TestSilentOutageFailsWritesUnsentAndHoldsTheWatchBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := store.NewMemory[robustness.Value]()
		f, err := robustness.NewFaults(m, 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		w, err := f.Watch(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()

		f.SetOutage(faultstore.Silent)
		if _, err := f.Create(ctx, "k0", robustness.Value{Client: 1, Seq: 1}); !errors.Is(err, faultstore.ErrNotSent) || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Create during a silent outage = %v, want ErrNotSent and ErrUnavailable", err)
		}
		if _, err := f.Get(ctx, "k0"); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Get during a silent outage = %v, want ErrUnavailable", err)
		}
		if _, err := m.Get(ctx, "k0"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a write failed during the outage reached the store: %v", err)
		}
		for _, k := range []string{"k1", "k2"} { // another client, still reaching the store
			if _, err := m.Create(ctx, k, robustness.Value{Client: 2, Seq: len(k)}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		select {
		case ev, ok := <-w.Events():
			t.Fatalf("the watch delivered %+v (open %v) during a silent outage", ev, ok)
		default:
		}

		f.SetOutage(faultstore.Up)
		for _, k := range []string{"k1", "k2"} {
			ev, ok := <-w.Events()
			if !ok || ev.Object.Key != k {
				t.Fatalf("after the outage the watch delivered %+v (open %v), want %s", ev, ok, k)
			}
		}

		f.SetOutage(faultstore.SilentHang)
		hung, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := f.Create(hung, "k3", robustness.Value{Client: 1, Seq: 1}); !errors.Is(err, faultstore.ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Create during a hanging outage = %v, want ErrNotSent once its context ended", err)
		}
		if _, err := m.Get(ctx, "k3"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a write hung by the outage reached the store: %v", err)
		}
		f.SetOutage(faultstore.Up)
	})
}
