package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

// Store is a store.Store persisted in one bbolt file. It is safe for
// concurrent use. Values are encoded with the Store's Codec: every Get, List
// and watch event decodes a fresh value, which the caller owns. Objects
// returned by writes carry the value the caller passed in.
//
// A Store holds its file until Close; after Close every method returns an
// error matching store.ErrUnavailable.
type Store[T any] struct {
	db       *bolt.DB
	codec    store.Codec[T]
	cfg      config
	identity string // read from the file at Open
	hub      *hub

	// closeMu is held for reading by every call in flight and for writing
	// by Close, which therefore waits for them.
	closeMu sync.RWMutex
	closed  bool

	committer *committer
	// watches counts running watch goroutines; Close waits for them.
	watches sync.WaitGroup
}

var _ store.Store[int] = (*Store[int])(nil)

// Open opens the store in the file at path, creating it (mode 0600) if it
// does not exist, with values encoded as JSON unless WithCodec says
// otherwise.
//
// It fails with ErrLocked if another Store holds the file for longer than
// the lock timeout, with ErrCorrupt if the file is damaged (an existing
// empty file included) or ErrFormat if it is not a store of this package
// (the file is then left untouched), and with an error matching
// store.ErrInvalid if an option is nil or out of range, the codec is nil or
// of another type, or the path empty. Open verifies the whole file before serving it, at the
// cost of one read of the file (see the package doc, Damage). A file
// written with a longer history than WithHistory asks for is trimmed at
// Open.
func Open[T any](path string, opts ...Option) (*Store[T], error) {
	codec, cfg, err := newConfig[T](opts)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%w: empty path", store.ErrInvalid)
	}
	db, err := openDB(path, cfg)
	if err != nil {
		return nil, err
	}
	f, err := prepare(db, cfg.history)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("boltstore: open %s: %w", path, err), db.Close())
	}
	return &Store[T]{
		db:        db,
		codec:     codec,
		cfg:       cfg,
		identity:  f.identity,
		hub:       newHub(f.rev, cfg.history),
		committer: &committer{db: db},
	}, nil
}

// Codec returns the codec that encodes the store's values (store.Encoded),
// so that helpers judge a write by the bytes the file would keep.
func (s *Store[T]) Codec() store.Codec[T] {
	if s == nil {
		return nil
	}
	return s.codec
}

var _ store.Encoded[int] = (*Store[int])(nil)

// Close ends every watch with store.ErrUnavailable, waits for calls in
// flight, and releases the file. Every acknowledged write is on disk before
// Close returns. Calls after Close fail with store.ErrUnavailable.
func (s *Store[T]) Close() error {
	if s == nil || s.db == nil {
		return errNotOpened
	}
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return errClosed
	}
	s.closed = true
	s.closeMu.Unlock()
	s.hub.close()
	s.watches.Wait()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("%w: close: %w", store.ErrUnavailable, err)
	}
	return nil
}

var (
	errClosed     = fmt.Errorf("%w: store is closed", store.ErrUnavailable)
	errNilContext = fmt.Errorf("%w: nil context", store.ErrInvalid)
	errNotOpened  = fmt.Errorf("%w: Store not made by Open", store.ErrInvalid)
)

// enter admits a call unless the store is closed; the caller must call the
// enterPrefix is enter for a read under prefix, which it checks first.
func (s *Store[T]) enterPrefix(ctx context.Context, prefix string) (exit func(), err error) {
	exit, err = s.enter(ctx)
	if err != nil {
		return nil, err
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		exit()
		return nil, err
	}
	return exit, nil
}

// returned function when done.
func (s *Store[T]) enter(ctx context.Context) (exit func(), err error) {
	if s == nil || s.db == nil {
		return nil, errNotOpened
	}
	if ctx == nil {
		return nil, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return nil, errClosed
	}
	return s.closeMu.RUnlock, nil
}

// dbError reports a failed bbolt transaction as store.ErrUnavailable.
func dbError(err error) error {
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// Get returns the object stored at key, or an error matching
// store.ErrNotFound.
func (s *Store[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	var obj store.Object[T]
	exit, err := s.enter(ctx)
	if err != nil {
		return obj, err
	}
	defer exit()
	if err := store.ValidateKey(key); err != nil {
		return obj, err
	}
	var value []byte
	err = view(s.db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		rec := b.objects.Get([]byte(key))
		if rec == nil {
			return nil
		}
		var v []byte
		obj.CreateRevision, obj.Revision, v, err = decodeObject(key, rec)
		value = bytes.Clone(v)
		return err
	})
	if err != nil {
		return obj, dbError(err)
	}
	if obj.Revision == 0 {
		return obj, fmt.Errorf("%w: %q", store.ErrNotFound, key)
	}
	obj.Key = key
	if obj.Value, err = s.decode(key, value); err != nil {
		return store.Object[T]{}, err
	}
	return obj, nil
}

// List returns the objects whose keys start with prefix, sorted by key, from
// one read transaction, with the revision that transaction saw.
func (s *Store[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	exit, err := s.enterPrefix(ctx, prefix)
	if err != nil {
		return nil, 0, err
	}
	defer exit()
	type raw struct {
		key            string
		createRev, rev int64
		value          []byte
	}
	var (
		rev  int64
		raws []raw
	)
	err = view(s.db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if rev, err = readCounter(b.meta, revisionKey); err != nil {
			return err
		}
		c := b.objects.Cursor()
		for k, v := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
			r := raw{key: string(k)}
			if r.createRev, r.rev, r.value, err = decodeObject(r.key, v); err != nil {
				return err
			}
			r.value = bytes.Clone(r.value)
			raws = append(raws, r)
		}
		return nil
	})
	if err != nil {
		return nil, 0, dbError(err)
	}
	objs := make([]store.Object[T], len(raws))
	for i, r := range raws {
		v, err := s.decode(r.key, r.value)
		if err != nil {
			return nil, 0, err
		}
		objs[i] = store.Object[T]{Key: r.key, Value: v, Revision: r.rev, CreateRevision: r.createRev}
	}
	return objs, rev, nil
}

// Revision returns the revision of the last committed write (0 for a new
// store).
func (s *Store[T]) Revision(ctx context.Context) (int64, error) {
	exit, err := s.enter(ctx)
	if err != nil {
		return 0, err
	}
	defer exit()
	var rev int64
	err = view(s.db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		rev, err = readCounter(b.meta, revisionKey)
		return err
	})
	if err != nil {
		return 0, dbError(err)
	}
	return rev, nil
}

func (s *Store[T]) decode(key string, data []byte) (T, error) {
	v, err := s.codec.Unmarshal(data)
	if err != nil {
		return v, fmt.Errorf("boltstore: value of %q: %w", key, err)
	}
	return v, nil
}
