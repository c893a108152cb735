package lock

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/internal/syncbuf"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// Timing of most lease tests: renew every second, give up after two, take
// over after three.
const (
	testTTL      = 3 * time.Second
	testInterval = time.Second
	testDeadline = 2 * time.Second
)

func newTestLease(t *testing.T, s store.Store[Record], holder string) *Lease {
	t.Helper()
	l, err := NewLease(s, "leader", LeaseOptions{
		Holder: holder, TTL: testTTL, RenewInterval: testInterval, RenewDeadline: testDeadline,
	})
	require.NoError(t, err)
	return l
}

func newMemory(t *testing.T) *store.Memory[Record] {
	t.Helper()
	m := store.NewMemory[Record]()
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// acquireAsync runs Acquire in a goroutine; the result arrives on the
// channel with the fake time it was acquired.
type acquired struct {
	lock Lock
	at   time.Time
	err  error
}

func acquireAsync(ctx context.Context, l *Lease) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		lk, err := l.Acquire(ctx)
		ch <- acquired{lock: lk, at: time.Now(), err: err}
	}()
	return ch
}

// cancelledAt records the fake time ctx is cancelled.
func cancelledAt(ctx context.Context) func() time.Time {
	ch := make(chan time.Time, 1)
	context.AfterFunc(ctx, func() { ch <- time.Now() })
	return func() time.Time { return <-ch }
}

func TestNewLeaseRejectsBadInput(t *testing.T) {
	m := store.NewMemory[Record]()
	defer m.Close()
	ok := LeaseOptions{Holder: "a"}
	cases := map[string]struct {
		s    store.Store[Record]
		key  string
		opts LeaseOptions
	}{
		"nil store":              {nil, "k", ok},
		"empty key":              {m, "", ok},
		"key with NUL":           {m, "a\x00b", ok},
		"oversized key":          {m, strings.Repeat("k", store.MaxKeyLen+1), ok},
		"no holder":              {m, "k", LeaseOptions{}},
		"deadline equals TTL":    {m, "k", LeaseOptions{Holder: "a", TTL: time.Second, RenewDeadline: time.Second}},
		"deadline beyond TTL":    {m, "k", LeaseOptions{Holder: "a", TTL: time.Second, RenewDeadline: 2 * time.Second}},
		"interval past deadline": {m, "k", LeaseOptions{Holder: "a", TTL: 3 * time.Second, RenewInterval: 2 * time.Second, RenewDeadline: time.Second}},
		"negative interval":      {m, "k", LeaseOptions{Holder: "a", RenewInterval: -time.Second}},
		"negative TTL":           {m, "k", LeaseOptions{Holder: "a", TTL: -time.Second}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := NewLease(c.s, c.key, c.opts)
			require.ErrorIs(t, err, ErrInvalid)
			require.Nil(t, l)
		})
	}
	_, err := NewLease(m, "", ok)
	require.ErrorIs(t, err, store.ErrInvalid, "a bad key also matches the store's error")
}

func TestLeaseDefaults(t *testing.T) {
	m := store.NewMemory[Record]()
	defer m.Close()
	l, err := NewLease(m, "k", LeaseOptions{Holder: "a"})
	require.NoError(t, err)
	require.Equal(t, DefaultTTL, l.opts.TTL)
	require.Equal(t, DefaultTTL/3, l.opts.RenewInterval)
	require.Equal(t, DefaultTTL*2/3, l.opts.RenewDeadline)
}

func TestLeaseRefusesNilContextAndZeroLease(t *testing.T) {
	m := store.NewMemory[Record]()
	defer m.Close()
	l := newTestLease(t, m, "a")
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err := l.Acquire(nil)
	require.ErrorIs(t, err, ErrInvalid)
	//lint:ignore SA1012 a nil context is the bad input under test
	_, _, err = l.TryAcquire(nil)
	require.ErrorIs(t, err, ErrInvalid)

	var zero Lease
	_, err = zero.Acquire(t.Context())
	require.ErrorIs(t, err, ErrInvalid)
	var nilLease *Lease
	_, _, err = nilLease.TryAcquire(t.Context())
	require.ErrorIs(t, err, ErrInvalid)

	lk, ok, err := l.TryAcquire(t.Context())
	require.NoError(t, err)
	require.True(t, ok)
	//lint:ignore SA1012 a nil context is the bad input under test
	require.ErrorIs(t, lk.Release(nil), ErrInvalid)
	require.NoError(t, lk.Release(t.Context()))
}

// TestLeaseAcquireRenewRelease: the token is the record's CreateRevision,
// every renewal writes the record, and Release deletes it, cancels the
// context with ErrReleased and voids the guard.
func TestLeaseAcquireRenewRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		l := newTestLease(t, m, "a")
		lk, err := l.Acquire(t.Context())
		require.NoError(t, err)

		obj, err := m.Get(t.Context(), "leader")
		require.NoError(t, err)
		require.Equal(t, obj.CreateRevision, lk.Token())
		require.Equal(t, Record{Holder: "a", TTL: testTTL}, obj.Value)
		require.Equal(t, store.Guard{Key: "leader", Revision: lk.Token(), Created: true}, lk.Guard())

		<-time.After(10*testTTL + testInterval/2)
		require.NoError(t, lk.Context().Err(), "a renewing holder keeps the lease")
		obj, err = m.Get(t.Context(), "leader")
		require.NoError(t, err)
		require.Equal(t, lk.Token(), obj.CreateRevision, "renewals keep the term")
		require.Equal(t, int64(30), obj.Value.Renewals, "one renewal per interval")
		require.Equal(t, lk.Token()+30, obj.Revision, "every renewal is a write")

		_, err = m.Create(t.Context(), "work", Record{Holder: "a"}, lk.Guard())
		require.NoError(t, err, "a guarded write of the current term is accepted")

		require.NoError(t, lk.Release(t.Context()))
		require.ErrorIs(t, context.Cause(lk.Context()), ErrReleased)
		_, err = m.Get(t.Context(), "leader")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, lk.Release(t.Context()), "Release is idempotent")

		_, err = m.Create(t.Context(), "work2", Record{Holder: "a"}, lk.Guard())
		require.ErrorIs(t, err, store.ErrGuardFailed, "a released term's writes are fenced")
	})
}

// TestLeaseReleaseHandsOverAtOnce: a contender blocked in Acquire gets the
// lease as soon as the holder releases, without waiting for the TTL.
func TestLeaseReleaseHandsOverAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		a, err := newTestLease(t, m, "a").Acquire(t.Context())
		require.NoError(t, err)
		got := acquireAsync(t.Context(), newTestLease(t, m, "b"))

		<-time.After(5 * testTTL)
		synctest.Wait()
		require.Empty(t, got, "the contender must wait while the holder renews")

		released := time.Now()
		require.NoError(t, a.Release(t.Context()))
		b := <-got
		require.NoError(t, b.err)
		require.Less(t, b.at.Sub(released), testTTL/10)
		require.Greater(t, b.lock.Token(), a.Token())
		require.NoError(t, b.lock.Release(t.Context()))
	})
}

// TestLeaseHolderGivesUpBeforeTakeover: a holder whose renewals fail or hang
// loses its context at the renew deadline, strictly before a contender
// takes over, which needs a full TTL of unchanged record.
func TestLeaseHolderGivesUpBeforeTakeover(t *testing.T) {
	for _, fault := range []string{"fail", "hang"} {
		t.Run(fault, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newMemory(t)
				fs := newFaultStore(t, m)
				start := time.Now()
				a, err := newTestLease(t, fs, "a").Acquire(t.Context())
				require.NoError(t, err)
				aLost := cancelledAt(a.Context())
				got := acquireAsync(t.Context(), newTestLease(t, m, "b"))

				// Two renewals succeed, then the store goes away for a.
				<-time.After(2*testInterval + testInterval/2)
				lastRenewal := start.Add(2 * testInterval)
				if fault == "fail" {
					fs.failFor(time.Hour)
				} else {
					fs.hangFor(time.Hour)
				}

				lost := aLost()
				require.Equal(t, lastRenewal.Add(testDeadline), lost, "lost exactly at the renew deadline")
				require.ErrorIs(t, context.Cause(a.Context()), ErrLost)
				b := <-got
				require.NoError(t, b.err)
				require.Equal(t, lastRenewal.Add(testTTL), b.at, "takeover a TTL after the last change")
				require.True(t, lost.Before(b.at), "holder lost at %v, contender acquired at %v", lost, b.at)

				if fault == "fail" {
					require.ErrorIs(t, a.Release(t.Context()), store.ErrUnavailable)
				} else {
					require.NoError(t, a.Release(t.Context()))
					obj, err := m.Get(t.Context(), "leader")
					require.NoError(t, err)
					require.Equal(t, b.lock.Token(), obj.CreateRevision, "Release leaves a later term's record alone")
				}
				require.NoError(t, b.lock.Release(t.Context()))
			})
		})
	}
}

// TestLeaseLostAtOnceOnConflict: if another writer changes or deletes the
// record, the holder's next renewal fails and it gives up at once.
func TestLeaseLostAtOnceOnConflict(t *testing.T) {
	for _, change := range []string{"update", "delete"} {
		t.Run(change, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newMemory(t)
				a, err := newTestLease(t, m, "a").Acquire(t.Context())
				require.NoError(t, err)
				obj, err := m.Get(t.Context(), "leader")
				require.NoError(t, err)
				if change == "update" {
					_, err = m.Update(t.Context(), "leader", Record{Holder: "intruder", TTL: testTTL}, obj.Revision)
				} else {
					_, err = m.Delete(t.Context(), "leader", obj.Revision)
				}
				require.NoError(t, err)
				start := time.Now()
				<-a.Context().Done()
				require.Equal(t, testInterval, time.Since(start), "lost at the first renewal, not the deadline")
				require.ErrorIs(t, context.Cause(a.Context()), ErrLost)
				// The record still belongs to a's term (an update keeps its
				// CreateRevision), so Release clears it.
				require.NoError(t, a.Release(t.Context()))
				_, err = m.Get(t.Context(), "leader")
				require.ErrorIs(t, err, store.ErrNotFound)
			})
		})
	}
}

// TestLeasePausedHolderIsFenced: a holder frozen for longer than the TTL
// (its renewal in flight and its worker between a check and a write) loses
// to a contender, and the writes it makes when it wakes up are rejected.
func TestLeasePausedHolderIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		fs := newFaultStore(t, m)
		a, err := newTestLease(t, fs, "a").Acquire(t.Context())
		require.NoError(t, err)
		aLost := cancelledAt(a.Context())
		got := acquireAsync(t.Context(), newTestLease(t, m, "b"))

		// The worker checks its context, then is frozen before writing.
		require.NoError(t, a.Context().Err())
		fs.pauseFor(3 * testTTL)
		lateWrite := make(chan error, 1)
		go func() {
			<-time.After(3 * testTTL)
			_, err := m.Create(context.Background(), "work", Record{Holder: "a"}, a.Guard())
			lateWrite <- err
		}()

		b := <-got
		require.NoError(t, b.err)
		require.True(t, aLost().Before(b.at))
		_, err = m.Create(t.Context(), "work", Record{Holder: "b"}, b.lock.Guard())
		require.NoError(t, err)

		require.ErrorIs(t, <-lateWrite, store.ErrGuardFailed)
		<-time.After(testTTL) // the frozen renewal lands, and fails
		obj, err := m.Get(t.Context(), "leader")
		require.NoError(t, err)
		require.Equal(t, b.lock.Token(), obj.CreateRevision)
		require.NoError(t, b.lock.Context().Err(), "the new holder is undisturbed")
		require.NoError(t, a.Release(t.Context()))
		require.NoError(t, b.lock.Release(t.Context()))
	})
}

// TestLeaseClockRates: with clock rates whose ratio is within TTL /
// RenewDeadline the holder gives up before the contender takes over; beyond
// the bound they overlap, which shows the bound is what keeps them apart.
func TestLeaseClockRates(t *testing.T) {
	cases := []struct {
		name              string
		holder, contender float64
		overlap           bool
	}{
		{"same rate", 1, 1, false},
		{"holder slow", 0.8, 1, false},
		{"contender fast", 1, 1.4, false},
		{"both near the bound", 0.8, 1.15, false},
		{"holder fast, contender slow", 1.5, 0.7, false},
		{"beyond the bound", 0.5, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newMemory(t)
				fs := newFaultStore(t, m)
				la := newTestLease(t, fs, "a")
				la.clock = clock{rate: c.holder}
				lb := newTestLease(t, m, "b")
				lb.clock = clock{rate: c.contender}

				a, err := la.Acquire(t.Context())
				require.NoError(t, err)
				aLost := cancelledAt(a.Context())
				got := acquireAsync(t.Context(), lb)
				fs.failFor(time.Hour)

				b := <-got
				require.NoError(t, b.err)
				overlap := a.Context().Err() == nil
				require.Equal(t, c.overlap, overlap, "holder still leading when the contender took over")
				if !overlap {
					require.True(t, aLost().Before(b.at))
				} else {
					aLost()
				}
				require.NoError(t, b.lock.Release(t.Context()))
			})
		})
	}
}

// TestLeaseTryAcquire: TryAcquire never waits; repeated calls take over a
// record abandoned for a TTL, counted from this Lease's first sighting.
func TestLeaseTryAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		fs := newFaultStore(t, m)
		a, ok, err := newTestLease(t, fs, "a").TryAcquire(t.Context())
		require.NoError(t, err)
		require.True(t, ok)
		fs.failFor(time.Hour) // a's process is gone as far as the store knows

		lb := newTestLease(t, m, "b")
		first := time.Now()
		for {
			b, ok, err := lb.TryAcquire(t.Context())
			require.NoError(t, err)
			if ok {
				require.Equal(t, testTTL, time.Since(first))
				require.Error(t, a.Context().Err())
				require.NoError(t, b.Release(t.Context()))
				break
			}
			require.Less(t, time.Since(first), testTTL)
			<-time.After(testInterval / 2)
		}
		fs.failFor(0)
		require.NoError(t, a.Release(t.Context()))
	})
}

func TestLeaseTryAcquireReportsStoreErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFaultStore(t, newMemory(t))
		fs.failFor(time.Hour)
		lk, ok, err := newTestLease(t, fs, "a").TryAcquire(t.Context())
		require.ErrorIs(t, err, store.ErrUnavailable)
		require.False(t, ok)
		require.Nil(t, lk)
	})
}

// TestLeaseAcquireRetriesStoreErrors: Acquire rides out an unreachable
// store.
func TestLeaseAcquireRetriesStoreErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFaultStore(t, newMemory(t))
		start := time.Now()
		fs.failFor(5 * time.Second)
		lk, err := newTestLease(t, fs, "a").Acquire(t.Context())
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), 5*time.Second)
		require.NoError(t, lk.Release(t.Context()))
	})
}

// TestLeaseAcquireHonoursContext: Acquire returns ctx's error once ctx ends,
// leaving no goroutine or watch behind (synctest checks at the end).
func TestLeaseAcquireHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		a, err := newTestLease(t, m, "a").Acquire(t.Context())
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		lk, err := newTestLease(t, m, "b").Acquire(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Nil(t, lk)
		require.Equal(t, 10*time.Second, time.Since(start))
		require.NoError(t, a.Release(t.Context()))
	})
}

// TestLeaseContendersWaitForTheRecordTTL: a contender configured with a
// shorter TTL still waits the TTL the holder wrote in its record.
func TestLeaseContendersWaitForTheRecordTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		fs := newFaultStore(t, m)
		a, err := newTestLease(t, fs, "a").Acquire(t.Context())
		require.NoError(t, err)
		fs.failFor(time.Hour)
		short, err := NewLease(m, "leader", LeaseOptions{Holder: "b", TTL: time.Second / 2})
		require.NoError(t, err)
		start := time.Now()
		b, err := short.Acquire(t.Context())
		require.NoError(t, err)
		require.Equal(t, testTTL, time.Since(start))
		require.Error(t, a.Context().Err())
		require.NoError(t, b.Release(t.Context()))
	})
}

// TestLeaseContenderPollsWithoutWatch: with watches failing, a contender
// still notices a release, within one poll interval.
func TestLeaseContenderPollsWithoutWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		a, err := newTestLease(t, m, "a").Acquire(t.Context())
		require.NoError(t, err)
		fs := newFaultStore(t, m)
		fs.setNoWatch(true)
		got := acquireAsync(t.Context(), newTestLease(t, fs, "b"))
		<-time.After(testTTL + testInterval/3)
		released := time.Now()
		require.NoError(t, a.Release(t.Context()))
		b := <-got
		require.NoError(t, b.err)
		require.LessOrEqual(t, b.at.Sub(released), testInterval)
		require.NoError(t, b.lock.Release(t.Context()))
	})
}

// TestLeaseReleaseAfterLossHandsOver: a holder that lost by its deadline but
// whose record was not yet taken over deletes it on Release, so a contender
// need not wait out the TTL.
func TestLeaseReleaseAfterLossHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		fs := newFaultStore(t, m)
		a, err := newTestLease(t, fs, "a").Acquire(t.Context())
		require.NoError(t, err)
		got := acquireAsync(t.Context(), newTestLease(t, m, "b"))
		fs.hangFor(time.Hour)
		<-a.Context().Done()
		require.ErrorIs(t, context.Cause(a.Context()), ErrLost)
		released := time.Now()
		require.NoError(t, a.Release(t.Context()))
		b := <-got
		require.NoError(t, b.err)
		require.Equal(t, released, b.at)
		require.NoError(t, b.lock.Release(t.Context()))
	})
}

// TestLeaseReleaseHonoursContext: Release waits for a renewal in flight only
// as long as its context allows, and can be called again.
func TestLeaseReleaseHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemory(t)
		fs := newFaultStore(t, m)
		a, err := newTestLease(t, fs, "a").Acquire(t.Context())
		require.NoError(t, err)
		fs.pauseFor(testInterval + 10*time.Second) // the first renewal freezes
		<-time.After(testInterval + time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.ErrorIs(t, a.Release(ctx), context.DeadlineExceeded)
		require.Error(t, a.Context().Err(), "the context is cancelled even so")
		require.NoError(t, a.Release(t.Context()))
		_, err = m.Get(t.Context(), "leader")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestLeaseLogs: a configured logger hears of acquisition, loss and release.
func TestLeaseLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncbuf.Buffer
		m := newMemory(t)
		l, err := NewLease(m, "leader", LeaseOptions{
			Holder: "a", TTL: testTTL, RenewInterval: testInterval, RenewDeadline: testDeadline,
			Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		})
		require.NoError(t, err)
		lk, err := l.Acquire(t.Context())
		require.NoError(t, err)
		obj, err := m.Get(t.Context(), "leader")
		require.NoError(t, err)
		_, err = m.Update(t.Context(), "leader", Record{Holder: "intruder"}, obj.Revision)
		require.NoError(t, err)
		<-lk.Context().Done()
		require.NoError(t, lk.Release(t.Context()))
		logs := buf.String()
		for _, want := range []string{`msg="lease acquired" lease=leader holder=a token=1`, `msg="lease lost"`, `msg="lease released"`} {
			require.Contains(t, logs, want)
		}
	})
}
