package boltstore

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// found is what Open reads of a store file before serving it.
type found struct {
	rev, compacted int64
	// format is the file's format version: 1, 2 or currentFormat.
	format int
	// identity is the store's identity; empty before format 3, until
	// prepare has given the file one.
	identity string
}

// prepare checks the file's format, its identity and every record
// (checkRecords) in a read transaction. Only if there is something to
// change (a file of an earlier format to convert, a history longer than
// keep revisions to trim) does it write, in one transaction.
func prepare(db *bolt.DB, keep int) (found, error) {
	var f found
	err := view(db, func(tx *bolt.Tx) error {
		var err error
		f, err = inspect(tx)
		return err
	})
	if err != nil || (f.format == currentFormat && f.compacted >= f.rev-int64(keep)) {
		return f, err
	}
	err = update(db, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if f.format == 1 {
			if err := migrate1(b); err != nil {
				return err
			}
			if err := checkRecords(b, f.rev, f.compacted); err != nil {
				return err
			}
		}
		if f.format < currentFormat {
			if f.identity, err = addIdentity(b.meta); err != nil {
				return err
			}
		}
		return prune(b, f.compacted, f.rev-int64(keep))
	})
	return f, err
}

// inspect checks the format marker, the counters and the identity of the
// store in tx and, unless the file is in format 1 (records without
// checksums, to convert), every record.
func inspect(tx *bolt.Tx) (found, error) {
	var f found
	if tx.Bucket(metaBucket) == nil {
		return f, noStore(tx)
	}
	var err error
	if f.format, err = checkFormat(tx.Bucket(metaBucket)); err != nil {
		return f, err
	}
	b, err := openBuckets(tx)
	if err != nil {
		return f, err
	}
	if f.rev, err = readCounter(b.meta, revisionKey); err != nil {
		return f, err
	}
	if f.compacted, err = readCounter(b.meta, compactedKey); err != nil {
		return f, err
	}
	if f.compacted > f.rev || f.compacted < 0 {
		return f, fmt.Errorf("%w: compacted revision %d, store revision %d", ErrCorrupt, f.compacted, f.rev)
	}
	switch {
	case f.format == currentFormat:
		f.identity, err = readIdentity(b.meta)
	case b.meta.Get(identityKey) != nil:
		err = fmt.Errorf("%w: a file of format %d with an identity", ErrCorrupt, f.format)
	}
	if err == nil && f.format != 1 {
		err = checkRecords(b, f.rev, f.compacted)
	}
	return f, err
}

// noStore explains why a bbolt file without the store's meta bucket is
// refused. Open creates its files with the buckets in them (createWith), so
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

// initialise creates the buckets of the store in a new bbolt file, and the
// store's identity with them, in the one transaction that makes the file.
func initialise(tx *bolt.Tx) error {
	for _, name := range [][]byte{metaBucket, objectsBucket, historyBucket} {
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(metaBucket)
	return errors.Join(
		meta.Put(formatKey, formatMarker()),
		meta.Put(identityKey, identityRecord(newIdentity())),
		putCounter(meta, revisionKey, 0),
		putCounter(meta, compactedKey, 0),
		putCounter(meta, objectsKey, 0),
	)
}
