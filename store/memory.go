package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/converge-go/converge/internal/mapshrink"
)

// Memory is an in-memory Store. It never serialises: the values it hands out
// (from Get, List, writes and watch events) are the very values it stores,
// shared with every other reader. Callers must treat them as immutable and
// copy before changing; WithMutationCheck detects violations in tests.
//
// Memory retains a bounded change history for watches (WithHistory) and ends
// watchers that fall too far behind with ErrLagging (WithWatchLag), so that
// writers never wait for readers. Close ends every watcher; afterwards every
// method returns ErrUnavailable.
//
// Every method checks its input, then its context, then whether the store is
// closed, and writes nothing unless all three pass. A nil context, a nil
// *Memory and a Memory not made by NewMemory are refused with an error
// matching ErrInvalid.
type Memory[T any] struct {
	cfg      memoryConfig
	identity string // made by NewMemory, never changed

	mu       sync.RWMutex
	objects  map[string]entry[T] // each keyed by its object's key
	fps      map[string][]byte   // with WithMutationCheck: each value's fingerprint
	peak     int                 // the most objects held since objects was last rebuilt
	rev      int64
	hist     history[T]
	tombs    tombstones[T]
	order    writeOrder // from the first Diff on
	watchers map[*memoryWatcher[T]]struct{}
	closed   bool
}

// entry is a live object without its key, which is the key of the
// store's map: a key's string header is held once, not twice, and the
// slot holds no fingerprint unless the store checks mutations (80 bytes
// a slot of a pointer-valued object took, 40 now).
type entry[T any] struct {
	value     T
	rev       int64 // Object.Revision
	createRev int64 // Object.CreateRevision
}

func entryOf[T any](obj Object[T]) entry[T] {
	return entry[T]{value: obj.Value, rev: obj.Revision, createRev: obj.CreateRevision}
}

// object returns e as the object at key.
func (e entry[T]) object(key string) Object[T] {
	return Object[T]{Key: key, Value: e.value, Revision: e.rev, CreateRevision: e.createRev}
}

var _ Store[int] = (*Memory[int])(nil)

// NewMemory returns an empty in-memory store at revision 0, with an
// identity of its own (Identity) made from crypto/rand. Nil options are
// ignored. An option out of range (a negative size) makes every operation
// of the store fail with an error matching ErrInvalid, so that NewMemory
// stays an expression.
func NewMemory[T any](opts ...MemoryOption) *Memory[T] {
	cfg := memoryConfig{history: DefaultHistory, watchLag: DefaultWatchLag, tombstones: DefaultTombstones, orderFrom: orderFrom, diffPage: diffPageSize}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	m := &Memory[T]{
		cfg:      cfg,
		identity: newIdentity(),
		objects:  make(map[string]entry[T]),
		hist:     newHistory[T](cfg.history),
		watchers: make(map[*memoryWatcher[T]]struct{}),
	}
	if cfg.checkMut {
		m.fps = make(map[string][]byte)
	}
	return m
}

// begin runs the checks every method starts with, after input validation.
func (m *Memory[T]) begin(ctx context.Context) error {
	switch {
	case m == nil:
		return fmt.Errorf("%w: nil *Memory", ErrInvalid)
	case m.watchers == nil: // set once by NewMemory, never replaced (objects is)
		return fmt.Errorf("%w: Memory not made by NewMemory", ErrInvalid)
	case ctx == nil:
		return fmt.Errorf("%w: nil context", ErrInvalid)
	case m.cfg.invalid != nil:
		return m.cfg.invalid
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.cfg.checkMut {
		if err := m.checkMutations(); err != nil {
			if m.cfg.onMutation == nil {
				return err
			}
			m.cfg.onMutation(err)
		}
	}
	return nil
}

// usable reports ErrUnavailable once the store is closed. Call with m.mu held.
func (m *Memory[T]) usable() error {
	if m.closed {
		return fmt.Errorf("%w: memory store is closed", ErrUnavailable)
	}
	return nil
}

// lockUsable begins an operation under ctx and takes m.mu for writing,
// unless the store is closed. On nil the caller holds m.mu.
func (m *Memory[T]) lockUsable(ctx context.Context) error {
	if err := m.begin(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	if err := m.usable(); err != nil {
		m.mu.Unlock()
		return err
	}
	return nil
}

// Get returns the object stored at key, or an error matching ErrNotFound.
func (m *Memory[T]) Get(ctx context.Context, key string) (Object[T], error) {
	if err := ValidateKey(key); err != nil {
		return Object[T]{}, err
	}
	if err := m.begin(ctx); err != nil {
		return Object[T]{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.usable(); err != nil {
		return Object[T]{}, err
	}
	e, ok := m.objects[key]
	if !ok {
		return Object[T]{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	return e.object(key), nil
}

// List returns the objects whose keys start with prefix, sorted by key, and
// the revision of the snapshot: the store held exactly these objects at that
// revision.
func (m *Memory[T]) List(ctx context.Context, prefix string) ([]Object[T], int64, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, 0, err
	}
	if err := m.begin(ctx); err != nil {
		return nil, 0, err
	}
	m.mu.RLock()
	if err := m.usable(); err != nil {
		m.mu.RUnlock()
		return nil, 0, err
	}
	var out []Object[T]
	for k, e := range m.objects {
		if strings.HasPrefix(k, prefix) {
			out = append(out, e.object(k))
		}
	}
	rev := m.rev
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b Object[T]) int { return cmp.Compare(a.Key, b.Key) })
	return out, rev, nil
}

// Revision returns the revision of the last write, 0 for a new store.
func (m *Memory[T]) Revision(ctx context.Context) (int64, error) {
	if err := m.begin(ctx); err != nil {
		return 0, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.usable(); err != nil {
		return 0, err
	}
	return m.rev, nil
}

// Create stores value at key if the key does not exist (ErrExists) and every
// guard holds (ErrGuardFailed).
func (m *Memory[T]) Create(ctx context.Context, key string, value T, guards ...Guard) (Object[T], error) {
	if err := m.lockWrite(ctx, key, value, 0, guards); err != nil {
		return Object[T]{}, err
	}
	defer m.mu.Unlock()
	if _, ok := m.objects[key]; ok {
		return Object[T]{}, fmt.Errorf("%w: %q", ErrExists, key)
	}
	rev := m.rev + 1
	obj := Object[T]{Key: key, Value: value, Revision: rev, CreateRevision: rev}
	m.commit(Created, obj, CauseFrom(ctx))
	return obj, nil
}

// lockWrite checks a write of value at key (revision 0 for a create),
// begins it and takes the store's lock, then checks the guards under it.
// It returns with m.mu held if and only if it returns nil.
func (m *Memory[T]) lockWrite(ctx context.Context, key string, value T, revision int64, guards []Guard) error {
	if err := validateWrite(key, value, revision, guards); err != nil {
		return err
	}
	if err := m.begin(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	if err := m.precheck(guards); err != nil {
		m.mu.Unlock()
		return err
	}
	return nil
}

// Update replaces the value at key if the key's Revision is still revision
// (else ErrConflict, or ErrNotFound if the key does not exist) and every guard
// holds (ErrGuardFailed).
func (m *Memory[T]) Update(ctx context.Context, key string, value T, revision int64, guards ...Guard) (Object[T], error) {
	if err := m.lockWrite(ctx, key, value, revision, guards); err != nil {
		return Object[T]{}, err
	}
	defer m.mu.Unlock()
	cur, err := m.expect(key, revision)
	if err != nil {
		return Object[T]{}, err
	}
	obj := Object[T]{Key: key, Value: value, Revision: m.rev + 1, CreateRevision: cur.CreateRevision}
	m.commit(Updated, obj, CauseFrom(ctx))
	return obj, nil
}

// Delete removes key if its Revision is still revision (else ErrConflict, or
// ErrNotFound) and every guard holds (ErrGuardFailed). It returns the
// revision of the delete.
func (m *Memory[T]) Delete(ctx context.Context, key string, revision int64, guards ...Guard) (int64, error) {
	if err := ValidateKey(key); err != nil {
		return 0, err
	}
	if err := ValidateRevision(revision); err != nil {
		return 0, err
	}
	if err := ValidateGuards(guards); err != nil {
		return 0, err
	}
	if err := m.begin(ctx); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.precheck(guards); err != nil {
		return 0, err
	}
	cur, err := m.expect(key, revision)
	if err != nil {
		return 0, err
	}
	cur.Revision = m.rev + 1
	m.commit(Deleted, cur, CauseFrom(ctx))
	return cur.Revision, nil
}

func validateWrite[T any](key string, value T, revision int64, guards []Guard) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ValidateValue(value); err != nil {
		return err
	}
	if err := ValidateRevision(revision); err != nil {
		return err
	}
	return ValidateGuards(guards)
}

// precheck runs the checks every write makes under the write lock: the store
// is open and every guard holds.
func (m *Memory[T]) precheck(guards []Guard) error {
	if err := m.usable(); err != nil {
		return err
	}
	for _, g := range guards {
		var have int64
		if e, ok := m.objects[g.Key]; ok {
			have = e.rev
			if g.Created {
				have = e.createRev
			}
		}
		if have != g.Revision {
			return guardFailed(g, have)
		}
	}
	return nil
}

// expect returns the object at key if its revision is revision.
func (m *Memory[T]) expect(key string, revision int64) (Object[T], error) {
	e, ok := m.objects[key]
	if !ok {
		return Object[T]{}, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	if e.rev != revision {
		return Object[T]{}, fmt.Errorf("%w: %q is at revision %d, not %d", ErrConflict, key, e.rev, revision)
	}
	return e.object(key), nil
}

// commit applies a validated write at revision obj.Revision (m.rev+1): the
// object map, the history (with the write's cause) and the watchers. Call
// with m.mu held for writing.
func (m *Memory[T]) commit(typ EventType, obj Object[T], cause string) {
	var fp []byte
	if m.cfg.checkMut {
		fp = fingerprint(obj.Value)
	}
	switch typ {
	case Deleted:
		m.tombs.deleted(obj, m.cfg.tombstones)
	case Created:
		m.tombs.created(obj.Key)
	}
	if typ == Deleted {
		delete(m.objects, obj.Key)
		delete(m.fps, obj.Key)
		// Once most objects are deleted, their slots go back to the heap.
		m.objects = mapshrink.Shrunk(m.objects, &m.peak, mapshrink.Floor)
	} else {
		m.objects[obj.Key] = entryOf(obj)
		if m.fps != nil {
			m.fps[obj.Key] = fp
		}
		mapshrink.Note(m.objects, &m.peak)
	}
	m.rev = obj.Revision
	m.noteWrite(obj.Key, obj.Revision)
	m.hist.add(record[T]{ev: Event[T]{Type: typ, Object: obj, Cause: cause}, fp: fp})
	oldest := m.hist.oldest()
	for w := range m.watchers {
		if !w.written(m.rev, oldest) {
			delete(m.watchers, w)
		}
	}
}

// Compact discards the change history up to and including revision rev, as a
// backend's compaction would: a later Watch after a revision below rev fails
// with ErrCompacted, and running watchers that still need a discarded revision
// end with ErrCompacted. rev must not exceed the current revision; compacting
// to a revision at or below the oldest retained one does nothing.
func (m *Memory[T]) Compact(ctx context.Context, rev int64) error {
	if err := ValidateRevision(rev); err != nil {
		return err
	}
	if err := m.begin(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	if rev > m.rev {
		return fmt.Errorf("%w: compact to revision %d beyond the current revision %d", ErrInvalid, rev, m.rev)
	}
	m.hist.compact(rev)
	m.tombs.compact(rev)
	for w := range m.watchers {
		if !w.compacted(m.hist.oldest()) {
			delete(m.watchers, w)
		}
	}
	return nil
}

// Close ends every watcher with ErrUnavailable and waits for their
// goroutines to exit; afterwards every method returns ErrUnavailable. It is
// safe to call more than once and returns nil, except on a nil *Memory
// (ErrInvalid).
func (m *Memory[T]) Close() error {
	if m == nil {
		return fmt.Errorf("%w: nil *Memory", ErrInvalid)
	}
	m.mu.Lock()
	m.closed = true
	var exited []<-chan struct{}
	for w := range m.watchers {
		w.end(fmt.Errorf("%w: memory store is closed", ErrUnavailable))
		exited = append(exited, w.done)
	}
	clear(m.watchers)
	m.mu.Unlock()
	for _, done := range exited {
		<-done
	}
	return nil
}
