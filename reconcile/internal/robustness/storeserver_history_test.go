package robustness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/converge-go/converge/reconcile/internal/robustness"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// storeServerKills is how many times the history runs kill the store
// server: alternately frozen first (SIGSTOP) until a write is in flight,
// and killed outright while calls are in flight.
const storeServerKills = 4

// TestAStoreServerKilledAndRestartedUnderLoadKeepsItsHistoryLinearizable
// runs the linearizability and watch checks of the other backends over
// convergestore, a separate process serving a bolt store with the
// API-server layer: the recorded clients and the watcher are httpstore
// clients of it, their values the spec of the objects the layer keeps.
// While they call, the server is killed with SIGKILL and restarted on the
// same directory and port, storeServerKills times, evenly over the run.
// Every other kill freezes the server first until a write is in flight, so
// that the run has writes whose answers were lost in a kill: those are
// recorded as ambiguous (the client cannot know), and the model accepts
// either outcome for them. A call refused while the server is down was
// never sent, so it waits for the server and is made again. The history
// must be linearizable (one revision per write across restarts, every
// acknowledged write kept) and the watch must deliver every change once,
// in order, across the kills.
func TestAStoreServerKilledAndRestartedUnderLoadKeepsItsHistoryLinearizable(t *testing.T) {
	for _, cfg := range httpRuns(1, 5) {
		t.Run(fmt.Sprintf("seed=%d", cfg.Seed), func(t *testing.T) {
			cfg.FailAfterCommit = 0 // the kills make the ambiguous writes
			cfg.SilentOutage = false
			srv := startStoreServer(t)
			ctx, stopKills := context.WithCancel(t.Context())
			defer stopKills()
			s := &serverStore{srv: srv}
			kills := &serverKills{srv: srv, s: s, every: int64(cfg.Ops / (storeServerKills + 1)), clients: int64(cfg.Clients), done: make(chan struct{})}
			b := robustness.Backend{
				Name: "convergestore",
				Open: func(t testing.TB) (store.Store[robustness.Value], error) {
					c, err := httpstore.New[robustness.Value](srv.url, httpstore.WithToken(srv.token),
						httpstore.WithWatchTimeout(httpWatchTimeout), httpstore.WithClientCodec[robustness.Value](specCodec{}))
					if err != nil {
						return nil, err
					}
					t.Cleanup(func() { _ = c.Close() })
					s.Store = c
					go kills.run(ctx)
					return s, nil
				},
			}
			r := robustness.Verify(t.Context(), t, b, cfg)
			stopKills()
			<-kills.done
			checkKills(t, kills, r)
		})
	}
}

// checkKills checks that every kill was made, under load, and that writes
// whose answers a kill lost were recorded as ambiguous.
func checkKills(t *testing.T, k *serverKills, r *robustness.Report) {
	t.Helper()
	if k.err != nil {
		t.Fatalf("kills: %v", k.err)
	}
	var made []string
	for _, m := range k.made {
		made = append(made, m.String())
	}
	st := r.Count()
	t.Logf("%d kills (%s), %d writes, %d ambiguous, revisions %d to %d", len(k.made), strings.Join(made, "; "), st.Writes, st.Ambiguous, r.Start, r.Revision)
	if len(k.made) != storeServerKills {
		t.Errorf("%d kills made; want %d", len(k.made), storeServerKills)
	}
	if st.Ambiguous == 0 {
		t.Errorf("no write was ambiguous, though %d kills were made with calls in flight (%s)", len(k.made), strings.Join(made, "; "))
	}
}

// specCodec carries a robustness.Value as the spec of an object of the
// API-server layer's shape ({"metadata":...,"spec":VALUE}), which the
// store server applies the layer to; the metadata the layer adds
// (the generation) is dropped when reading.
type specCodec struct{}

func (specCodec) Marshal(v robustness.Value) ([]byte, error) {
	return json.Marshal(struct {
		Spec robustness.Value `json:"spec"`
	}{v})
}

func (specCodec) Unmarshal(data []byte) (robustness.Value, error) {
	var obj struct {
		Metadata json.RawMessage   `json:"metadata"`
		Spec     *robustness.Value `json:"spec"`
	}
	if err := json.Unmarshal(data, &obj); err != nil || obj.Spec == nil {
		return robustness.Value{}, fmt.Errorf("%w: not an object with a spec: %s (%v)", store.ErrInvalid, data, err)
	}
	return *obj.Spec, nil
}

// maxRefused bounds the attempts of a call refused while the server says
// it serves, which cannot happen unless another program took its port.
const maxRefused = 100

// serverStore is a client of the store server whose calls refused with
// ECONNREFUSED, which therefore sent nothing, wait until the server serves
// again and are made again, so that the workload spends its operations on
// a serving store. It counts the calls in flight, the writes among them,
// and the calls completed.
type serverStore struct {
	store.Store[robustness.Value]
	srv                      *storeServer
	flying, writing, settled atomic.Int64
}

func (s *serverStore) call(ctx context.Context, write bool, f func() error) error {
	s.flying.Add(1)
	if write {
		s.writing.Add(1)
	}
	defer func() {
		s.flying.Add(-1)
		if write {
			s.writing.Add(-1)
		}
		s.settled.Add(1)
	}()
	for attempt := 0; ; attempt++ {
		err := f()
		if !errors.Is(err, syscall.ECONNREFUSED) || attempt == maxRefused {
			return err
		}
		if err := s.srv.waitUp(ctx); err != nil {
			return err
		}
	}
}

func (s *serverStore) Get(ctx context.Context, key string) (obj store.Object[robustness.Value], err error) {
	err = s.call(ctx, false, func() error { obj, err = s.Store.Get(ctx, key); return err })
	return obj, err
}

func (s *serverStore) Create(ctx context.Context, key string, v robustness.Value, guards ...store.Guard) (obj store.Object[robustness.Value], err error) {
	err = s.call(ctx, true, func() error { obj, err = s.Store.Create(ctx, key, v, guards...); return err })
	return obj, err
}

func (s *serverStore) Update(ctx context.Context, key string, v robustness.Value, rev int64, guards ...store.Guard) (obj store.Object[robustness.Value], err error) {
	err = s.call(ctx, true, func() error { obj, err = s.Store.Update(ctx, key, v, rev, guards...); return err })
	return obj, err
}

func (s *serverStore) Delete(ctx context.Context, key string, rev int64, guards ...store.Guard) (r int64, err error) {
	err = s.call(ctx, true, func() error { r, err = s.Store.Delete(ctx, key, rev, guards...); return err })
	return r, err
}

func (s *serverStore) Revision(ctx context.Context) (r int64, err error) {
	for attempt := 0; ; attempt++ {
		r, err = s.Store.Revision(ctx)
		if !errors.Is(err, syscall.ECONNREFUSED) || attempt == maxRefused {
			return r, err
		}
		if err := s.srv.waitUp(ctx); err != nil {
			return 0, err
		}
	}
}

// Watch opens the watch once the server serves; the client's watch then
// rides out the kills by itself.
func (s *serverStore) Watch(ctx context.Context, prefix string, after int64) (store.Watcher[robustness.Value], error) {
	if err := s.srv.waitUp(ctx); err != nil {
		return nil, err
	}
	return s.Store.Watch(ctx, prefix, after)
}

// serverKills kills the store server and restarts it as the workload's
// calls complete: after every `every` completed calls, storeServerKills
// times.
type serverKills struct {
	srv     *storeServer
	s       *serverStore
	every   int64
	clients int64
	made    []kill
	err     error         // set before done is closed
	done    chan struct{} // closed when run returns
}

// kill is one kill made: whether the server was frozen first, and the
// calls and writes in flight when it was killed.
type kill struct {
	frozen          bool
	flying, writing int64
}

func (k kill) String() string {
	how := "killed"
	if k.frozen {
		how = "frozen, then killed"
	}
	return fmt.Sprintf("%s with %d calls in flight, %d of them writes", how, k.flying, k.writing)
}

func (k *serverKills) run(ctx context.Context) {
	defer close(k.done)
	for i := range storeServerKills {
		if err := poll(ctx, func() bool { return k.s.settled.Load() >= int64(i+1)*k.every }); err != nil {
			return // the run ended first: checkKills reports the kills missing
		}
		m := kill{frozen: i%2 == 0}
		if m.frozen {
			// Calls pile up at the frozen server, unanswered: once a write is
			// among them (or every client waits on a read), its answer is lost.
			if k.err = k.srv.signal(syscall.SIGSTOP); k.err != nil {
				return
			}
			k.err = poll(ctx, func() bool { return k.s.writing.Load() > 0 || k.s.flying.Load() == k.clients })
		} else {
			k.err = poll(ctx, func() bool { return k.s.flying.Load() > 0 })
		}
		if k.err != nil {
			return
		}
		m.flying, m.writing = k.s.flying.Load(), k.s.writing.Load()
		if k.err = k.srv.Restart(); k.err != nil {
			return
		}
		k.made = append(k.made, m)
	}
}

// poll waits until cond holds, for at most procPatience, checking every
// 100 µs.
func poll(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, procPatience)
	defer cancel()
	tick := time.NewTicker(100 * time.Microsecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
