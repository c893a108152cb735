package faultstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
)

// reportingStore is a memory store whose watchers answer progress requests
// at once, with the store's revision, after the events already read: a
// stand-in for a backend watcher that implements store.ProgressRequester.
type reportingStore struct {
	*store.Memory[string]
	requests atomic.Int64
}

func (s *reportingStore) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[string], error) {
	inner, err := s.Memory.Watch(ctx, prefix, after)
	if err != nil {
		return nil, err
	}
	w := &reportingWatcher{s: s, inner: inner, events: make(chan store.Event[string]), asks: make(chan int64, 16), done: make(chan struct{})}
	go w.forward()
	return w, nil
}

type reportingWatcher struct {
	s      *reportingStore
	inner  store.Watcher[string]
	events chan store.Event[string]
	asks   chan int64
	done   chan struct{}
}

func (w *reportingWatcher) forward() {
	defer close(w.events)
	for {
		var ev store.Event[string]
		select {
		case e, ok := <-w.inner.Events():
			if !ok {
				return
			}
			ev = e
		case rev := <-w.asks:
			ev = store.Event[string]{Type: store.Progress, Object: store.Object[string]{Revision: rev}}
		case <-w.done:
			return
		}
		select {
		case w.events <- ev:
		case <-w.done:
			return
		}
	}
}

func (w *reportingWatcher) RequestProgress(ctx context.Context) error {
	w.s.requests.Add(1)
	rev, err := w.s.Revision(ctx)
	if err != nil {
		return err
	}
	w.asks <- rev
	return nil
}

func (w *reportingWatcher) Events() <-chan store.Event[string] { return w.events }
func (w *reportingWatcher) Err() error                         { return w.inner.Err() }
func (w *reportingWatcher) Stop()                              { w.inner.Stop(); close(w.done) }

// nothingArrives fails t if w delivers an event or ends before the bubble
// is idle.
func nothingArrives(t *testing.T, w store.Watcher[string]) {
	t.Helper()
	synctest.Wait()
	select {
	case ev, ok := <-w.Events():
		t.Fatalf("a silent outage let the watch deliver %+v (open %v)", ev, ok)
	default:
	}
}

// A silent outage fails every call while open watches stay open, deliver
// nothing and swallow progress requests; when it ends, the watch delivers
// what happened meanwhile, in order, and then answers the request.
func TestSilentOutageHoldsWatchesOpenAndDeaf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		inner := &reportingStore{Memory: store.NewMemory[string]()}
		s := newStore[string](t, inner, faultstore.Options{})
		w, err := s.Watch(ctx, "", 0)
		require.NoError(t, err)
		defer w.Stop()
		pr, ok := w.(store.ProgressRequester)
		require.True(t, ok, "a fault watcher over a progress-reporting watcher must report progress")
		_, err = inner.Create(ctx, "a", "1")
		require.NoError(t, err)
		require.Equal(t, "a", storetest.NextEvent(t, w).Object.Key)

		// Up: a request passes through and is answered.
		require.NoError(t, pr.RequestProgress(ctx))
		ev := storetest.NextEvent(t, w)
		require.Equal(t, store.Progress, ev.Type)
		require.EqualValues(t, 1, ev.Object.Revision)

		s.SetOutage(faultstore.Silent)
		_, err = s.Get(ctx, "a")
		require.ErrorIs(t, err, store.ErrUnavailable)
		_, err = s.Create(ctx, "x", "1")
		require.ErrorIs(t, err, store.ErrUnavailable)
		require.ErrorIs(t, err, faultstore.ErrNotSent)
		_, err = inner.Get(ctx, "x")
		require.ErrorIs(t, err, store.ErrNotFound, "a write failed by the outage reached the store")
		_, err = s.Watch(ctx, "", 0)
		require.ErrorIs(t, err, store.ErrUnavailable)
		_, err = inner.Create(ctx, "b", "2") // another program, still reaching the store
		require.NoError(t, err)
		_, err = inner.Create(ctx, "c", "3")
		require.NoError(t, err)
		asked := inner.requests.Load()
		require.NoError(t, pr.RequestProgress(ctx), "a request is accepted, only not answered")
		require.NoError(t, pr.RequestProgress(ctx))
		<-time.After(time.Minute)
		nothingArrives(t, w)
		require.Equal(t, asked, inner.requests.Load(), "a request reached the store during the outage")

		s.SetOutage(faultstore.Up)
		require.Equal(t, "b", storetest.NextEvent(t, w).Object.Key)
		require.Equal(t, "c", storetest.NextEvent(t, w).Object.Key)
		ev = storetest.NextEvent(t, w)
		require.Equal(t, store.Progress, ev.Type, "the request made during the outage was not answered after it")
		require.GreaterOrEqual(t, ev.Object.Revision, int64(3))
		require.Equal(t, asked+1, inner.requests.Load(), "requests made during the outage coalesce into one")
		_, err = s.Get(ctx, "c")
		require.NoError(t, err)
	})
}

// A watch whose inner watch ends during a silent outage ends only after
// the outage, so the outage stays silent.
func TestSilentOutageHoldsTheEndOfAWatchBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := store.NewMemory[string]()
		s := newStore[string](t, mem, faultstore.Options{})
		_, err := mem.Create(ctx, "a", "1")
		require.NoError(t, err)
		w, err := s.Watch(ctx, "", 1)
		require.NoError(t, err)
		defer w.Stop()
		_, isRequester := w.(store.ProgressRequester)
		require.Equal(t, isRequester, watcherReportsProgress(t, mem), "the fault watcher reports progress exactly when the inner one does")

		s.SetOutage(faultstore.Silent)
		_, err = mem.Create(ctx, "b", "2")
		require.NoError(t, err)
		rev, err := mem.Revision(ctx)
		require.NoError(t, err)
		require.NoError(t, mem.Compact(ctx, rev)) // the inner watch may end with ErrCompacted
		nothingArrives(t, w)

		s.SetOutage(faultstore.Up)
		// Either the inner watch had taken in "b" before the compaction
		// and goes on, or it ended with ErrCompacted; it need not end.
		ev, ok := <-w.Events()
		if ok {
			require.Equal(t, "b", ev.Object.Key)
			return
		}
		require.ErrorIs(t, w.Err(), store.ErrCompacted)
	})
}

func watcherReportsProgress(t *testing.T, s store.Store[string]) bool {
	w, err := s.Watch(context.Background(), "", 0)
	require.NoError(t, err)
	defer w.Stop()
	_, ok := w.(store.ProgressRequester)
	return ok
}

// In a SilentHang outage calls hang until their context ends, or go ahead
// once the outage ends.
func TestSilentHangOutageBlocksCallsUntilContextOrRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := store.NewMemory[string]()
		s := newStore[string](t, mem, faultstore.Options{})
		s.SetOutage(faultstore.SilentHang)
		require.Equal(t, faultstore.SilentHang, s.Outage())
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := s.Create(ctx, "a", "1")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, faultstore.ErrNotSent)
		require.Equal(t, time.Second, time.Since(start), "the call did not hang until its context ended")
		_, err = mem.Get(context.Background(), "a")
		require.ErrorIs(t, err, store.ErrNotFound, "a hung call wrote")

		done := make(chan error, 1)
		go func() {
			_, err := s.Create(context.Background(), "b", "2")
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("a call returned during the outage: %v", err)
		default:
		}
		s.SetOutage(faultstore.Up)
		require.NoError(t, <-done)
	})
}

// A loud outage ends watches and refuses progress requests; SetRates
// stops injected errors.
func TestLoudOutageEndsWatchesAndSetRatesStopsErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		inner := &reportingStore{Memory: store.NewMemory[string]()}
		s := newStore[string](t, inner, faultstore.Options{Rates: faultstore.Rates{Error: 1}})
		_, err := s.Get(ctx, "a")
		require.ErrorIs(t, err, store.ErrUnavailable)
		require.NoError(t, s.SetRates(faultstore.Rates{}))
		w, err := s.Watch(ctx, "", 0)
		require.NoError(t, err)
		defer w.Stop()
		s.SetOutage(faultstore.Loud)
		err = w.(store.ProgressRequester).RequestProgress(ctx)
		require.ErrorIs(t, err, store.ErrUnavailable)
		for range w.Events() {
		}
		require.ErrorIs(t, w.Err(), store.ErrUnavailable)
		require.True(t, errors.Is(w.(store.ProgressRequester).RequestProgress(ctx), store.ErrUnavailable))
		s.SetOutage(faultstore.Up)
		_, err = s.Create(ctx, "a", "1")
		require.NoError(t, err)
	})
}
