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
	db    *bolt.DB
	codec store.Codec[T]
	cfg   config
	hub   *hub

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
	rev, err := prepare(db, cfg.history)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("boltstore: open %s: %w", path, err), db.Close())
	}
	return &Store[T]{
		db:        db,
		codec:     codec,
		cfg:       cfg,
		hub:       newHub(rev),
		committer: &committer{db: db},
	}, nil
}

// prepare checks the file's format and every record (checkRecords) in a
// read transaction, and returns the store revision. Only if there is
// something to change (a format 1 file to convert, a history longer than
// keep revisions to trim) does it write, in one transaction.
func prepare(db *bolt.DB, keep int) (rev int64, err error) {
	var compacted int64
	var format1 bool
	err = view(db, func(tx *bolt.Tx) error {
		var err error
		rev, compacted, format1, err = inspect(tx)
		return err
	})
	if err != nil || (!format1 && compacted >= rev-int64(keep)) {
		return rev, err
	}
	err = update(db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if format1 {
			if err := migrate1(b); err != nil {
				return err
			}
			if err := checkRecords(b, rev, compacted); err != nil {
				return err
			}
		}
		return prune(b, compacted, rev-int64(keep))
	})
	return rev, err
}

// inspect checks the format marker and counters of the store in tx and,
// unless the file is in format 1 (records without checksums, to convert),
// every record.
func inspect(tx *bolt.Tx) (rev, compacted int64, format1 bool, err error) {
	if tx.Bucket(metaBucket) == nil {
		return 0, 0, false, noStore(tx)
	}
	formatErr := checkFormat(tx.Bucket(metaBucket))
	format1 = errors.Is(formatErr, errFormat1)
	if formatErr != nil && !format1 {
		return 0, 0, false, formatErr
	}
	b, err := openBuckets(tx)
	if err != nil {
		return 0, 0, false, err
	}
	if rev, err = readCounter(b.meta, revisionKey); err != nil {
		return 0, 0, false, err
	}
	if compacted, err = readCounter(b.meta, compactedKey); err != nil {
		return 0, 0, false, err
	}
	if compacted > rev || compacted < 0 {
		return 0, 0, false, fmt.Errorf("%w: compacted revision %d, store revision %d", ErrCorrupt, compacted, rev)
	}
	if !format1 {
		err = checkRecords(b, rev, compacted)
	}
	return rev, compacted, format1, err
}

// noStore explains why a bbolt file without the store's meta bucket is
// refused. Open creates its files with the buckets in them (createFile), so
// a file without them is damaged, unless other buckets say that it belongs
// to someone else.
func noStore(tx *bolt.Tx) error {
	var foreign []byte
	_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if !bytes.Equal(name, objectsBucket) && !bytes.Equal(name, historyBucket) {
			foreign = name
		}
		return nil
	})
	switch {
	case tx.Bucket(objectsBucket) != nil || tx.Bucket(historyBucket) != nil:
		return fmt.Errorf("%w: the store's meta bucket is missing", ErrCorrupt)
	case foreign != nil:
		return fmt.Errorf("%w: bbolt file with foreign bucket %q", ErrFormat, foreign)
	}
	return fmt.Errorf("%w: bbolt file without the store's buckets", ErrCorrupt)
}

// initialise creates the buckets of the store in a new bbolt file.
func initialise(tx *bolt.Tx) error {
	for _, name := range [][]byte{metaBucket, objectsBucket, historyBucket} {
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(metaBucket)
	return errors.Join(
		meta.Put(formatKey, formatMarker()),
		putCounter(meta, revisionKey, 0),
		putCounter(meta, compactedKey, 0),
		putCounter(meta, objectsKey, 0),
	)
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
	exit, err := s.enter(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer exit()
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, 0, err
	}
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
