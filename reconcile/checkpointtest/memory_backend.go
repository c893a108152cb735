package checkpointtest

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/storetest"
)

// NewMemoryBackend returns a Backend of store.Memory stores behind a
// Switch, closed at t's cleanup. A copy is a new store.Memory that holds
// the history of the store copied, replayed write by write (so its objects
// have the same revisions), served under that store's identity, as its
// file would be, restored from a copy. StartFresh serves a new store.Memory
// under its own identity. With resume, the watches outlive Stop and the
// restore, as etcd's client's do (Switch.SetResume).
func NewMemoryBackend(t *testing.T, resume bool) Backend {
	b := &memoryBackend{}
	b.sw.SetResume(resume)
	b.cur = b.open(t)
	b.sw.Serve(b.cur, "")
	id, err := b.cur.Identity(t.Context())
	if err != nil {
		t.Fatalf("Identity: %v", err)
	}
	b.identity = id
	return b
}

// memoryBackend is NewMemoryBackend's Backend; identity is the first
// store's, which its copies answer.
type memoryBackend struct {
	sw       Switch[*storetest.Value]
	cur      *store.Memory[*storetest.Value]
	served   string // the identity cur is served under ("": its own)
	identity string
}

func (b *memoryBackend) open(t *testing.T) *store.Memory[*storetest.Value] {
	m := store.NewMemory[*storetest.Value]()
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func (b *memoryBackend) Store() store.Store[*storetest.Value] { return &b.sw }
func (b *memoryBackend) Stop(*testing.T)                      { b.sw.Stop() }
func (b *memoryBackend) Start(*testing.T)                     { b.sw.Serve(b.cur, b.served) }

func (b *memoryBackend) StartFresh(t *testing.T) {
	b.cur, b.served = b.open(t), ""
	b.sw.Serve(b.cur, "")
}

// Copy replays the current store's history into a new one.
func (b *memoryBackend) Copy(t *testing.T) func(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	cp := b.open(t)
	rev, err := b.cur.Revision(ctx)
	if err != nil {
		t.Fatalf("Revision: %v", err)
	}
	if rev > 0 {
		replay(ctx, t, b.cur, cp, rev)
	}
	return func(*testing.T) {
		b.cur, b.served = cp, b.identity
		b.sw.Serve(cp, b.identity)
	}
}

// replay makes every write of from's history up to rev in to, in order.
func replay(ctx context.Context, t *testing.T, from, to store.Store[*storetest.Value], rev int64) {
	t.Helper()
	w, err := from.Watch(ctx, "", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	for ev := range w.Events() {
		n := 0
		if ev.Type != store.Deleted {
			n = ev.Object.Value.N
		}
		if got := apply(ctx, t, to, []write{{ev.Object.Key, n}}); got != ev.Object.Revision {
			t.Fatalf("replayed %s at revision %d, want %d", ev.Object.Key, got, ev.Object.Revision)
		}
		if ev.Object.Revision >= rev {
			return
		}
	}
	t.Fatalf("the history ended before revision %d: %v", rev, w.Err())
}
