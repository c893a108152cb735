package lock

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/internal/pipenet"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// shortTermRival takes terms of the lease at key one after another, each
// held for up to most (at random) and released, campaigning again at once.
func shortTermRival(ctx context.Context, t *testing.T, l *Lease, most time.Duration, rnd *rand.Rand) {
	for ctx.Err() == nil {
		lk, err := l.Acquire(ctx)
		if err != nil {
			return
		}
		select {
		case <-time.After(time.Duration(1 + rnd.Int64N(int64(most)))):
		case <-ctx.Done():
		case <-lk.Context().Done():
		}
		if err := lk.Release(context.WithoutCancel(ctx)); err != nil && ctx.Err() == nil {
			t.Errorf("rival's release: %v", err)
		}
	}
}

// deleteRecord deletes the lease record at key, whoever holds it.
func deleteRecord(t *testing.T, m store.Store[Record], key string) {
	for {
		obj, err := m.Get(context.Background(), key)
		if errors.Is(err, store.ErrNotFound) {
			return
		}
		require.NoError(t, err)
		_, err = m.Delete(context.Background(), key, obj.Revision)
		if !errors.Is(err, store.ErrConflict) {
			require.NoError(t, err)
			return
		}
	}
}

// An elector whose lease record is deleted again and again, while a rival
// takes short terms back to back (releasing and campaigning again at
// once), gets a new term every time within the bound Lease states: it
// sees its loss within RenewInterval, and takes the record at the end of
// the rival's term then current (the rival yields it to a watching
// contender). Without that yield, the rival won every free moment and the
// elector had no term for 33 TTLs within 50 flips.
// It runs over the memory store, over a JSON view of a byte store, and
// over the HTTP client of a served store (on in-memory pipes, so that the
// bubble's clock reaches the server's watch, which delivers a moment
// late).
func TestAnElectorIsNotStarvedByARivalTakingShortTermsBackToBack(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store[Record]{
		"memory": func(t *testing.T) store.Store[Record] { return newMemory(t) },
		"view": func(t *testing.T) store.Store[Record] {
			raw := store.NewMemory[[]byte]()
			t.Cleanup(func() { _ = raw.Close() })
			return store.NewView[Record](raw, store.JSON[Record]{})
		},
		"http": servedOnPipes,
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(2) {
				synctest.Test(t, func(t *testing.T) { flipAgainstARival(t, newStore(t), seed, 250) })
			}
		})
	}
}

func flipAgainstARival(t *testing.T, m store.Store[Record], seed uint64, flips int) {
	const (
		ttl       = 300 * time.Millisecond
		rivalMost = 30 * time.Millisecond
	)
	opts := LeaseOptions{Holder: "manager", TTL: ttl}
	own, err := NewLease(m, "leader", opts)
	require.NoError(t, err)
	opts.Holder = "rival"
	rival, err := NewLease(m, "leader", opts)
	require.NoError(t, err)
	e, err := NewElector(own, ElectorOptions{})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	leads := make(chan time.Time)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, func(ctx context.Context) error {
			select {
			case leads <- time.Now():
			case <-ctx.Done():
			}
			<-ctx.Done()
			return nil
		})
	}()
	rivalDone := make(chan struct{})
	defer func() {
		cancel()
		require.NoError(t, <-done)
		<-rivalDone
	}()
	<-leads
	go func() {
		defer close(rivalDone)
		shortTermRival(ctx, t, rival, rivalMost, rand.New(rand.NewPCG(seed, 2)))
	}()

	rnd := rand.New(rand.NewPCG(seed, 1))
	bound := own.opts.RenewInterval + rivalMost
	var worst time.Duration
	for i := range flips {
		<-time.After(time.Duration(rnd.Int64N(int64(ttl))))
		deleteRecord(t, m, "leader")
		deleted := time.Now()
		select {
		case at := <-leads:
			worst = max(worst, at.Sub(deleted))
		case <-time.After(10 * time.Second):
			t.Fatalf("seed %d, flip %d: no new term for 10 s (%d TTLs)", seed, i+1, 10*time.Second/ttl)
		}
	}
	t.Logf("seed %d: worst wait for a new term over %d flips: %v (bound %v)", seed, flips, worst, bound)
	require.LessOrEqual(t, worst, bound)
}

// servedOnPipes serves a memory store over HTTP on a pipenet and returns
// a client of it; server, store and connections are closed at cleanup.
func servedOnPipes(t *testing.T) store.Store[Record] {
	m := newMemory(t)
	h, err := httpstore.NewHandler[Record](m)
	require.NoError(t, err)
	pn := pipenet.New()
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(pn) }()
	t.Cleanup(func() { _ = srv.Close() })
	hc := pn.Client()
	t.Cleanup(hc.CloseIdleConnections)
	c, err := httpstore.New[Record]("http://pipe.localhost", httpstore.WithHTTPClient(hc))
	require.NoError(t, err)
	return c
}
