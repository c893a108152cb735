package boltstore

import (
	"encoding/binary"
	"fmt"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

// File layout. Everything lives in three top-level buckets:
//
//	converge.meta     "format" → formatVersion
//	                  "revision" → store revision (uint64, big endian)
//	                  "compacted" → history revisions up to this one are gone
//	converge.objects  key → objectRecord
//	converge.history  revision (uint64, big endian) → historyRecord
//
// The history holds one record per revision, without gaps, from compacted+1
// to revision.
var (
	metaBucket    = []byte("converge.meta")
	objectsBucket = []byte("converge.objects")
	historyBucket = []byte("converge.history")

	formatKey    = []byte("format")
	revisionKey  = []byte("revision")
	compactedKey = []byte("compacted")

	formatVersion = []byte("converge-boltstore/1")
)

// objectRecord is a live object: createRevision, revision, encoded value.
const objectHeaderLen = 16

func encodeObject(createRev, rev int64, value []byte) []byte {
	b := make([]byte, objectHeaderLen+len(value))
	binary.BigEndian.PutUint64(b, uint64(createRev))
	binary.BigEndian.PutUint64(b[8:], uint64(rev))
	copy(b[objectHeaderLen:], value)
	return b
}

// decodeObject splits a stored object record. The value aliases b.
func decodeObject(key string, b []byte) (createRev, rev int64, value []byte, err error) {
	if len(b) < objectHeaderLen {
		return 0, 0, nil, fmt.Errorf("%w: object %q has a record of %d bytes", ErrCorrupt, key, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:])), b[objectHeaderLen:], nil
}

// historyRecord is one revision: event type, createRevision, key length,
// key, encoded value (the new value, or for a delete the last value).
const historyHeaderLen = 1 + 8 + 4

// rawEvent is a history record decoded as far as bytes go.
type rawEvent struct {
	typ       store.EventType
	key       string
	value     []byte
	rev       int64
	createRev int64
}

func encodeHistory(ev rawEvent) []byte {
	b := make([]byte, historyHeaderLen+len(ev.key)+len(ev.value))
	b[0] = byte(ev.typ)
	binary.BigEndian.PutUint64(b[1:], uint64(ev.createRev))
	binary.BigEndian.PutUint32(b[9:], uint32(len(ev.key)))
	n := copy(b[historyHeaderLen:], ev.key)
	copy(b[historyHeaderLen+n:], ev.value)
	return b
}

// decodeHistory decodes a history record; the event's value is a copy, safe
// to keep after the transaction.
func decodeHistory(rev int64, b []byte) (rawEvent, error) {
	if len(b) < historyHeaderLen {
		return rawEvent{}, fmt.Errorf("%w: history record %d has %d bytes", ErrCorrupt, rev, len(b))
	}
	typ := store.EventType(b[0])
	keyLen := int(binary.BigEndian.Uint32(b[9:]))
	if typ < store.Created || typ > store.Deleted || keyLen > len(b)-historyHeaderLen {
		return rawEvent{}, fmt.Errorf("%w: history record %d is malformed", ErrCorrupt, rev)
	}
	rest := b[historyHeaderLen:]
	return rawEvent{
		typ:       typ,
		key:       string(rest[:keyLen]),
		value:     append([]byte(nil), rest[keyLen:]...),
		rev:       rev,
		createRev: int64(binary.BigEndian.Uint64(b[1:])),
	}, nil
}

func revKey(rev int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(rev))
}

func revFromKey(k []byte) int64 {
	return int64(binary.BigEndian.Uint64(k))
}

// readCounter reads one of the uint64 counters of the meta bucket.
func readCounter(meta *bolt.Bucket, key []byte) (int64, error) {
	v := meta.Get(key)
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: counter %q has %d bytes", ErrCorrupt, key, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func putCounter(meta *bolt.Bucket, key []byte, v int64) error {
	return meta.Put(key, revKey(v))
}

// txBuckets are the buckets of one transaction.
type txBuckets struct {
	meta, objects, history *bolt.Bucket
}

func openBuckets(tx *bolt.Tx) (txBuckets, error) {
	b := txBuckets{
		meta:    tx.Bucket(metaBucket),
		objects: tx.Bucket(objectsBucket),
		history: tx.Bucket(historyBucket),
	}
	if b.meta == nil || b.objects == nil || b.history == nil {
		return b, fmt.Errorf("%w: a bucket of the store is missing", ErrCorrupt)
	}
	return b, nil
}
