package boltstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

// File layout. Everything lives in three top-level buckets:
//
//	converge.meta     "format" → formatMarker (checksum, formatVersion)
//	                  "identity" → identityRecord (checksum, the identity)
//	                  "revision" → store revision (uint64, big endian)
//	                  "compacted" → history revisions up to this one are gone
//	                  "objects" → the number of live objects
//	converge.objects  key → objectRecord
//	converge.history  revision (uint64, big endian) → historyRecord
//
// The history holds one record per revision, without gaps, from compacted+1
// to revision. Every record starts with a CRC-32C of the rest of the record
// and of its bbolt key, so a damaged record, key or value is reported as
// ErrCorrupt instead of being read as something that was never written.
// Format 1 had no checksums and format 2 no identity; Open converts such a
// file to format 3.
var (
	metaBucket    = []byte("converge.meta")
	objectsBucket = []byte("converge.objects")
	historyBucket = []byte("converge.history")

	formatKey    = []byte("format")
	identityKey  = []byte("identity")
	revisionKey  = []byte("revision")
	compactedKey = []byte("compacted")
	objectsKey   = []byte("objects")

	formatVersion   = []byte("converge-boltstore/3")
	formatVersion2  = []byte("converge-boltstore/2")
	formatVersion1  = []byte("converge-boltstore/1")
	formatPrefix    = "converge-boltstore/"
	castagnoliTable = crc32.MakeTable(crc32.Castagnoli)
)

// currentFormat is the format version of formatVersion.
const currentFormat = 3

// checksumLen is the length of the CRC-32C that starts every record.
const checksumLen = 4

// seal fills in the checksum of record b (whose first checksumLen bytes
// are reserved for it) stored under key k.
func seal(k, b []byte) []byte {
	binary.BigEndian.PutUint32(b, checksum(k, b[checksumLen:]))
	return b
}

// intact reports whether record b stored under key k has a valid checksum.
func intact(k, b []byte) bool {
	return len(b) >= checksumLen && binary.BigEndian.Uint32(b) == checksum(k, b[checksumLen:])
}

func checksum(k, rest []byte) uint32 {
	return crc32.Update(crc32.Checksum(k, castagnoliTable), castagnoliTable, rest)
}

// objectRecord is a live object: checksum, createRevision, revision,
// encoded value.
const objectHeaderLen = checksumLen + 16

func encodeObject(key string, createRev, rev int64, value []byte) []byte {
	b := make([]byte, objectHeaderLen+len(value))
	binary.BigEndian.PutUint64(b[checksumLen:], uint64(createRev))
	binary.BigEndian.PutUint64(b[checksumLen+8:], uint64(rev))
	copy(b[objectHeaderLen:], value)
	return seal([]byte(key), b)
}

// decodeObject checks and splits a stored object record. The value aliases
// b.
func decodeObject(key string, b []byte) (createRev, rev int64, value []byte, err error) {
	if len(b) < objectHeaderLen || !intact([]byte(key), b) {
		return 0, 0, nil, fmt.Errorf("%w: the record of object %q is damaged", ErrCorrupt, key)
	}
	createRev = int64(binary.BigEndian.Uint64(b[checksumLen:]))
	rev = int64(binary.BigEndian.Uint64(b[checksumLen+8:]))
	if createRev < 1 || rev < createRev {
		return 0, 0, nil, fmt.Errorf("%w: object %q has revisions %d (created %d)", ErrCorrupt, key, rev, createRev)
	}
	return createRev, rev, b[objectHeaderLen:], nil
}

// historyRecord is one revision: checksum, event type, createRevision, key
// length, key, encoded value (the new value, or for a delete the last
// value).
const historyHeaderLen = checksumLen + 1 + 8 + 4

// rawEvent is a history record decoded as far as bytes go.
type rawEvent struct {
	typ       store.EventType
	key       string
	value     []byte
	rev       int64
	createRev int64
	cause     string // the write's (store.WithCause); never in the file
}

func encodeHistory(ev rawEvent) []byte {
	b := make([]byte, historyHeaderLen+len(ev.key)+len(ev.value))
	h := b[checksumLen:]
	h[0] = byte(ev.typ)
	binary.BigEndian.PutUint64(h[1:], uint64(ev.createRev))
	binary.BigEndian.PutUint32(h[9:], uint32(len(ev.key)))
	n := copy(b[historyHeaderLen:], ev.key)
	copy(b[historyHeaderLen+n:], ev.value)
	return seal(revKey(ev.rev), b)
}

// decodeHistory checks and decodes a history record; the event's value is
// a copy, safe to keep after the transaction.
func decodeHistory(rev int64, b []byte) (rawEvent, error) {
	if len(b) < historyHeaderLen || !intact(revKey(rev), b) {
		return rawEvent{}, fmt.Errorf("%w: history record %d is damaged", ErrCorrupt, rev)
	}
	h := b[checksumLen:]
	typ := store.EventType(h[0])
	keyLen := int(binary.BigEndian.Uint32(h[9:]))
	createRev := int64(binary.BigEndian.Uint64(h[1:]))
	if typ < store.Created || typ > store.Deleted || keyLen > len(b)-historyHeaderLen ||
		createRev < 1 || createRev > rev {
		return rawEvent{}, fmt.Errorf("%w: history record %d is malformed", ErrCorrupt, rev)
	}
	rest := b[historyHeaderLen:]
	return rawEvent{
		typ:       typ,
		key:       string(rest[:keyLen]),
		value:     append([]byte(nil), rest[keyLen:]...),
		rev:       rev,
		createRev: createRev,
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
