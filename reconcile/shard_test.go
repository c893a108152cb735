package reconcile

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/store"
)

// fakeSharder owns the keys a test gives it; each key's ownership is
// proven by the revision of an epoch record in the same byte store.
type fakeSharder struct {
	epochs store.Store[int]
	mu     sync.Mutex
	owned  map[string]ownership
	subs   []func(func(string) bool, int64)
}

// Ownerless reports no ownerless bucket, and RecordPrefix no records in the
// controller's keyspace.
func (*fakeSharder) Ownerless() []int     { return nil }
func (*fakeSharder) RecordPrefix() string { return "" }

type ownership struct {
	rev    int64
	ctx    context.Context
	cancel context.CancelFunc
}

func (f *fakeSharder) Claim(key string) (Claim, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.owned[key]
	if !ok {
		return Claim{}, false
	}
	return Claim{Guards: []store.Guard{{Key: "epoch/" + key, Revision: o.rev}}, Owned: o.ctx}, true
}

func (f *fakeSharder) Subscribe(gained func(func(string) bool, int64)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, gained)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.subs = nil
	}
}

// take makes this replica the owner of key at a new epoch and tells the
// subscribers.
func (f *fakeSharder) take(t *testing.T, key string) {
	t.Helper()
	obj, err := store.CreateOrUpdate(t.Context(), f.epochs, "epoch/"+key, func(n int, _ bool) (int, error) { return n + 1, nil })
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	f.mu.Lock()
	f.owned[key] = ownership{rev: obj.Revision, ctx: ctx, cancel: cancel}
	subs := f.subs
	f.mu.Unlock()
	for _, fn := range subs {
		fn(func(k string) bool { return k == key }, obj.Revision)
	}
}

// lose hands key to another replica: a new epoch this replica does not hold.
func (f *fakeSharder) lose(t *testing.T, key string) {
	t.Helper()
	_, err := store.CreateOrUpdate(t.Context(), f.epochs, "epoch/"+key, func(n int, _ bool) (int, error) { return n + 1, nil })
	require.NoError(t, err)
	f.mu.Lock()
	o := f.owned[key]
	delete(f.owned, key)
	f.mu.Unlock()
	o.cancel()
}

// TestShardedControllerReconcilesOnlyOwnedKeysAndFencesTheirWrites: keys
// another replica owns are not reconciled and not waited for; a reconcile
// of an owned key writes with the ownership's guard, is cancelled the
// moment ownership is lost, and its late write is refused; a key taken
// over is reconciled without any change of its own.
func TestShardedControllerReconcilesOnlyOwnedKeysAndFencesTheirWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw := store.NewMemory[[]byte]()
		s := store.NewView[*item](raw, store.JSON[*item]{})
		sh := &fakeSharder{epochs: store.NewView[int](raw, store.JSON[int]{}), owned: map[string]ownership{}}
		sh.take(t, "items/mine")

		entered, lost := make(chan struct{}), make(chan error, 1)
		rec := &recorder{fn: func(ctx context.Context, req Request[*item]) (Result, error) {
			if req.Key == "items/mine" && req.Object.Value.Want == 2 {
				close(entered)
				<-ctx.Done() // cancelled by the loss of ownership
				_, err := req.Store.Update(context.Background(), req.Key, &item{Want: 2, Seen: 2}, req.Object.Revision)
				lost <- err
				return Result{}, ctx.Err()
			}
			_, err := req.Store.Update(ctx, req.Key, &item{Want: req.Object.Value.Want, Seen: req.Object.Value.Want}, req.Object.Revision)
			return Result{}, err
		}}
		c, err := New(s, rec, Options[*item]{Name: "sharded", Prefix: "items/", Shard: sh})
		require.NoError(t, err)
		stop := start(t, c)
		defer stop()

		put(t, s, "items/theirs", &item{Want: 1})
		rev := put(t, s, "items/mine", &item{Want: 1})
		require.NoError(t, c.WaitForRevision(t.Context(), rev), "a key owned elsewhere blocked WaitForRevision")
		require.Zero(t, rec.count("items/theirs"), "a key owned elsewhere was reconciled")
		got, err := s.Get(t.Context(), "items/mine")
		require.NoError(t, err)
		require.Equal(t, 1, got.Value.Seen, "the owner's guarded write did not land")

		put(t, s, "items/mine", &item{Want: 2})
		<-entered
		sh.lose(t, "items/mine")
		require.ErrorIs(t, <-lost, store.ErrGuardFailed, "a write after the loss of ownership was accepted")
		got, err = s.Get(t.Context(), "items/mine")
		require.NoError(t, err)
		require.Zero(t, got.Value.Seen, "the deposed owner's write changed the store")

		sh.take(t, "items/theirs")
		synctest.Wait()
		require.Equal(t, 1, rec.count("items/theirs"), "a key taken over was not reconciled")
	})
}

// prefixedSharder is a Sharder whose records live under shard/.
type prefixedSharder struct{ fakeSharder }

func (*prefixedSharder) RecordPrefix() string { return "shard/" }

// TestControllerWhosePrefixCoversTheShardRecordsIsRefused: a controller
// that would read its Sharder's records as objects (never decoding them,
// never syncing) is refused by New with ErrInvalid.
func TestControllerWhosePrefixCoversTheShardRecordsIsRefused(t *testing.T) {
	s := store.NewMemory[*item]()
	sh := &prefixedSharder{}
	for _, prefix := range []string{"", "sh", "shard/"} {
		_, err := New(s, &recorder{}, Options[*item]{Name: "x", Prefix: prefix, Shard: sh})
		require.ErrorIs(t, err, ErrInvalid, "prefix %q", prefix)
	}
	_, err := New(s, &recorder{}, Options[*item]{Name: "x", Prefix: "items/", Shard: sh})
	require.NoError(t, err)
}
