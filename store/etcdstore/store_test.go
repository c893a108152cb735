package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/storetest"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// patience bounds waits on a cluster so that a broken test fails instead of
// hanging; it is not an assertion about speed.
const patience = storetest.Patience

func newStore(t testing.TB, client *clientv3.Client, prefix string, opts ...etcdstore.Option) *etcdstore.Store[*item] {
	t.Helper()
	s, err := etcdstore.New[*item](client, prefix, opts...)
	if err != nil {
		t.Fatalf("New(%q): %v", prefix, err)
	}
	return s
}

// TestNewRefusesBadInputAndZeroOptionsSelectDefaults: bad input and
// out-of-range options fail with store.ErrInvalid and say why; zero
// options select the defaults.
func TestNewRefusesBadInputAndZeroOptionsSelectDefaults(t *testing.T) {
	client := clientv3.NewCtxClient(t.Context())
	defer client.Close()
	for name, make := range map[string]func() error{
		"nil client":    func() error { _, err := etcdstore.New[*item](nil, "app/"); return err },
		"empty prefix":  func() error { _, err := etcdstore.New[*item](client, ""); return err },
		"no slash":      func() error { _, err := etcdstore.New[*item](client, "app"); return err },
		"invalid UTF-8": func() error { _, err := etcdstore.New[*item](client, "a\xff/"); return err },
		"NUL byte":      func() error { _, err := etcdstore.New[*item](client, "a\x00/"); return err },
		"long prefix": func() error {
			_, err := etcdstore.New[*item](client, strings.Repeat("p", store.MaxKeyLen)+"/")
			return err
		},
		"nil option": func() error { _, err := etcdstore.New[*item](client, "app/", nil); return err },
		"negative value size": func() error {
			_, err := etcdstore.New[*item](client, "app/", etcdstore.WithMaxValueSize(-1))
			return err
		},
		"negative watch open timeout": func() error {
			_, err := etcdstore.New[*item](client, "app/", etcdstore.WithWatchOpenTimeout(-time.Second))
			return err
		},
		"watch open timeout below 1ms": func() error {
			_, err := etcdstore.New[*item](client, "app/", etcdstore.WithWatchOpenTimeout(time.Microsecond))
			return err
		},
		"nil codec": func() error {
			_, err := etcdstore.New[*item](client, "app/", etcdstore.WithCodec[*item](nil))
			return err
		},
		"codec of another type": func() error {
			_, err := etcdstore.New[*item](client, "app/", etcdstore.WithCodec[string](store.JSON[string]{}))
			return err
		},
	} {
		err := make()
		require.ErrorIs(t, err, store.ErrInvalid, name)
		require.NotEqual(t, store.ErrInvalid.Error(), err.Error(), "%s: the error names the problem", name)
	}
	s, err := etcdstore.New[*item](client, "app/", etcdstore.WithCodec[*item](store.JSON[*item]{}), etcdstore.WithMaxValueSize(1))
	require.NoError(t, err)
	_, err = etcdstore.New[*item](client, "app/", etcdstore.WithMaxValueSize(0), etcdstore.WithWatchOpenTimeout(0))
	require.NoError(t, err)
	require.Equal(t, "app/", s.Prefix())
}

// TestKeysOutsideThePrefixAreNeverReadWatchedOrWritten: keys outside the
// prefix, including ones that share its first bytes, are never read, listed,
// watched or written, and guard keys are relative to the prefix too.
func TestKeysOutsideThePrefixAreNeverReadWatchedOrWritten(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	start, err := s.Revision(ctx)
	require.NoError(t, err)
	w, err := s.Watch(ctx, "", start)
	require.NoError(t, err)
	defer w.Stop()

	for _, k := range []string{"app", "ap", "app2/x", "other/app/x", "app0"} {
		_, err := client.Put(ctx, k, `{"n":-1}`)
		require.NoError(t, err)
	}
	other := newStore(t, client, "app2/")
	lease, err := other.Create(ctx, "lease", &item{N: 1})
	require.NoError(t, err)

	_, err = s.Get(ctx, "x")
	require.ErrorIs(t, err, store.ErrNotFound)
	objs, _, err := s.List(ctx, "")
	require.NoError(t, err)
	require.Empty(t, objs)

	// The guard names "lease" under app/, which does not exist: the guard
	// on app2/lease's revision fails, the absent guard holds.
	_, err = s.Create(ctx, "a", &item{N: 1}, store.Guard{Key: "lease", Revision: lease.Revision})
	require.ErrorIs(t, err, store.ErrGuardFailed)
	a, err := s.Create(ctx, "a", &item{N: 1}, store.Guard{Key: "lease"})
	require.NoError(t, err)
	require.Equal(t, "a", a.Key)

	raw, err := client.Get(ctx, "app/a")
	require.NoError(t, err)
	require.Len(t, raw.Kvs, 1, "the store writes under its prefix")
	require.Equal(t, a.Revision, raw.Kvs[0].ModRevision, "revisions are etcd's")

	ev := nextEvent(t, w)
	require.Equal(t, store.Event[*item]{Type: store.Created, Object: a}, ev, "the first event is the store's own write")
}

// TestRevisionsSkipForeignWrites: writes outside the prefix take revisions
// of etcd's cluster-wide counter, so the store's revisions skip numbers;
// they still only grow, Revision reports the cluster's revision, and a
// watch resumes from any of them without a loss or a repeat.
func TestRevisionsSkipForeignWrites(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	start, err := s.Revision(ctx)
	require.NoError(t, err)

	var want []store.Event[*item]
	var last int64
	for i := range 5 {
		obj, err := s.Create(ctx, "k"+string(rune('0'+i)), &item{N: i})
		require.NoError(t, err)
		want = append(want, store.Event[*item]{Type: store.Created, Object: obj})
		if last != 0 {
			require.Equal(t, last+2, obj.Revision, "a foreign write in between took one revision")
		}
		foreign, err := client.Put(ctx, "elsewhere", "x")
		require.NoError(t, err)
		last = obj.Revision
		rev, err := s.Revision(ctx)
		require.NoError(t, err)
		require.Equal(t, foreign.Header.Revision, rev, "Revision is the cluster's, ahead of the store's last write")
		require.Greater(t, rev, obj.Revision)
	}
	afters := []int64{start}
	for _, ev := range want {
		afters = append(afters, ev.Object.Revision, ev.Object.Revision+1)
	}
	for _, after := range afters {
		var rest []store.Event[*item]
		for _, ev := range want {
			if ev.Object.Revision > after {
				rest = append(rest, ev)
			}
		}
		w, err := s.Watch(ctx, "", after)
		require.NoError(t, err)
		for _, ev := range rest {
			require.Equal(t, ev, nextEvent(t, w), "watch after %d", after)
		}
		w.Stop()
	}
}

// TestUpdateOrDeleteAtRevisionZeroNeverWrites: no object has revision 0, so
// Update and Delete with 0 never write: not found for a missing key, a
// conflict for a present one.
func TestUpdateOrDeleteAtRevisionZeroNeverWrites(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	_, err := s.Update(ctx, "missing", &item{}, 0)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.Delete(ctx, "missing", 0)
	require.ErrorIs(t, err, store.ErrNotFound)
	a, err := s.Create(ctx, "a", &item{N: 1})
	require.NoError(t, err)
	_, err = s.Update(ctx, "a", &item{N: 2}, 0)
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = s.Delete(ctx, "a", 0)
	require.ErrorIs(t, err, store.ErrConflict)
	rev, err := s.Revision(ctx)
	require.NoError(t, err)
	require.Equal(t, a.Revision, rev, "nothing was written")
}

// TestRequestsOverAnyLimitAreInvalidAndWriteNothing: values over the store's
// limit are refused before any request; requests over the server's or the
// client's limit, and transactions with more operations than the server
// allows, fail with store.ErrInvalid; none writes anything.
func TestRequestsOverAnyLimitAreInvalidAndWriteNothing(t *testing.T) {
	const serverLimit = 64 << 10
	e := startServer(t, func(cfg *embed.Config) { cfg.MaxRequestBytes = serverLimit })
	client := newClient(t, nil, e.Endpoint())
	ctx := t.Context()

	small := newStore(t, client, "small/", etcdstore.WithMaxValueSize(16))
	_, err := small.Create(ctx, "a", &item{S: strings.Repeat("x", 16)})
	require.ErrorIs(t, err, store.ErrInvalid, "over the store's limit")

	s := newStore(t, client, "big/", etcdstore.WithMaxValueSize(8<<20))
	a, err := s.Create(ctx, "a", &item{N: 1})
	require.NoError(t, err)

	_, err = s.Create(ctx, "b", &item{S: strings.Repeat("x", 2*serverLimit)})
	require.ErrorIs(t, err, store.ErrInvalid, "over the server's limit")
	require.ErrorIs(t, err, rpctypes.ErrRequestTooLarge, "etcd's error is wrapped")

	_, err = s.Update(ctx, "a", &item{S: strings.Repeat("x", 3<<20)}, a.Revision)
	require.ErrorIs(t, err, store.ErrInvalid, "over the client's send limit")

	guards := make([]store.Guard, 200)
	for i := range guards {
		guards[i] = store.Guard{Key: "g"}
	}
	_, err = s.Create(ctx, "c", &item{N: 1}, guards...)
	require.ErrorIs(t, err, store.ErrInvalid, "more operations than the server allows")

	objs, rev, err := s.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []store.Object[*item]{a}, objs)
	require.Equal(t, a.Revision, rev, "refused requests wrote nothing")
}

// TestUndecodableValueIsAnErrorNamingItsKeyNeverAPanic: a value under the
// prefix that the codec cannot decode is reported, never a panic, by Get,
// List and Watch.
func TestUndecodableValueIsAnErrorNamingItsKeyNeverAPanic(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	start, err := s.Revision(ctx)
	require.NoError(t, err)
	_, err = client.Put(ctx, "app/bad", "not json")
	require.NoError(t, err)

	_, err = s.Get(ctx, "bad")
	require.Error(t, err)
	require.NotErrorIs(t, err, store.ErrNotFound)
	require.Contains(t, err.Error(), `"bad"`)
	_, _, err = s.List(ctx, "")
	require.Error(t, err)
	require.NotErrorIs(t, err, store.ErrNotFound)
	require.Contains(t, err.Error(), `"bad"`)

	w, err := s.Watch(ctx, "", start)
	require.NoError(t, err)
	defer w.Stop()
	err = watchEnd(t, w)
	require.Error(t, err)
	require.Contains(t, err.Error(), `"bad"`)
}

// TestUnreachableClusterOrClosedClientIsErrUnavailable: a stopped cluster
// and a closed client give errors matching store.ErrUnavailable; a deadline
// that expires while waiting for the cluster matches
// context.DeadlineExceeded as well.
func TestUnreachableClusterOrClosedClientIsErrUnavailable(t *testing.T) {
	e := startServer(t, nil)
	client := newClient(t, nil, e.Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	a, err := s.Create(ctx, "a", &item{N: 1})
	require.NoError(t, err)
	w, err := s.Watch(ctx, "", a.Revision)
	require.NoError(t, err)
	defer w.Stop()
	e.Stop()

	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	_, err = s.Get(short(), "a")
	require.ErrorIs(t, err, store.ErrUnavailable, "Get")
	require.ErrorIs(t, err, context.DeadlineExceeded, "Get")
	_, _, err = s.List(short(), "")
	require.ErrorIs(t, err, store.ErrUnavailable, "List")
	_, err = s.Revision(short())
	require.ErrorIs(t, err, store.ErrUnavailable, "Revision")
	_, err = s.Update(short(), "a", &item{N: 2}, a.Revision)
	require.ErrorIs(t, err, store.ErrUnavailable, "Update")
	_, err = s.Delete(short(), "a", a.Revision)
	require.ErrorIs(t, err, store.ErrUnavailable, "Delete")
	_, err = s.Create(short(), "b", &item{N: 2})
	require.ErrorIs(t, err, store.ErrUnavailable, "Create")

	_, err = s.Watch(short(), "", a.Revision)
	require.ErrorIs(t, err, store.ErrUnavailable, "Watch")
	require.ErrorIs(t, err, context.DeadlineExceeded, "Watch")
	quick := newStore(t, client, "app/", etcdstore.WithWatchOpenTimeout(200*time.Millisecond))
	_, err = quick.Watch(ctx, "", a.Revision)
	require.ErrorIs(t, err, store.ErrUnavailable, "Watch past the open timeout")
	require.NoError(t, client.Close())
	require.ErrorIs(t, watchEnd(t, w), store.ErrUnavailable, "a watch when the client closes")
	_, err = s.Get(ctx, "a")
	require.ErrorIs(t, err, store.ErrUnavailable, "Get on a closed client")
	require.NotErrorIs(t, err, context.Canceled, "the caller's context was not cancelled")
}

// TestCompactRefusesTheFutureAndEndsOnlyWatchesFromBeforeIt: a future
// revision is refused, a revision already compacted is a no-op, a watch from
// before the compacted revision fails while one from it works, and a
// deletion after the compacted revision still carries the value the key had
// before it.
func TestCompactRefusesTheFutureAndEndsOnlyWatchesFromBeforeIt(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	ctx := t.Context()
	s := newStore(t, client, "app/")
	a, err := s.Create(ctx, "a", &item{N: 1})
	require.NoError(t, err)
	b, err := s.Create(ctx, "b", &item{N: 2})
	require.NoError(t, err)

	require.ErrorIs(t, s.Compact(ctx, -1), store.ErrInvalid)
	require.ErrorIs(t, s.Compact(ctx, b.Revision+1), store.ErrInvalid)
	require.NoError(t, s.Compact(ctx, 0))
	require.NoError(t, s.Compact(ctx, a.Revision))
	require.NoError(t, s.Compact(ctx, a.Revision), "compacting again is a no-op")

	require.ErrorIs(t, watchFailure(t, s, a.Revision-1), store.ErrCompacted)
	require.NoError(t, s.Compact(ctx, b.Revision))
	require.ErrorIs(t, watchFailure(t, s, a.Revision), store.ErrCompacted)
	w, err := s.Watch(ctx, "", b.Revision)
	require.NoError(t, err)
	defer w.Stop()
	drev, err := s.Delete(ctx, "a", a.Revision)
	require.NoError(t, err)
	ev := nextEvent(t, w)
	require.Equal(t, store.Deleted, ev.Type)
	require.Equal(t, drev, ev.Object.Revision)
	require.Equal(t, 1, ev.Object.Value.N, "the deletion lost the value compacted history held")
}

// nextEvent is storetest.NextEvent for this package's item.
func nextEvent(t testing.TB, w store.Watcher[*item]) store.Event[*item] {
	t.Helper()
	return storetest.NextEvent(t, w)
}

// watchFailure opens a watch after after that must fail, and returns why:
// Watch's error, or the watch's Err once it ends.
func watchFailure(t testing.TB, s *etcdstore.Store[*item], after int64) error {
	t.Helper()
	w, err := s.Watch(t.Context(), "", after)
	if err != nil {
		return err
	}
	defer w.Stop()
	return watchEnd(t, w)
}

// watchEnd waits for the watch to end without an event and returns Err.
func watchEnd(t testing.TB, w store.Watcher[*item]) error {
	t.Helper()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case ev, ok := <-w.Events():
		if ok {
			t.Fatalf("unexpected event at revision %d for %q", ev.Object.Revision, ev.Object.Key)
		}
		if w.Err() == nil {
			return errors.New("watch ended with a nil error")
		}
		return w.Err()
	case <-timer.C:
		t.Fatalf("watch did not end within %v", patience)
	}
	return nil
}
