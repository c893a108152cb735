package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Checkpoint file layout (OpenCheckpoint). Two top-level buckets:
//
//	converge.checkpoint          "format" → checkpointMarker (checksum, version)
//	                             "state"  → stateRecord
//	converge.checkpoint.objects  key → objectRecord (as the store's: checksum,
//	                                   createRevision, revision, value)
//
// stateRecord is: checksum, revision, seen (Unix nanoseconds), count, sum,
// then the identity and the prefix, each a length (uint32) and its bytes;
// integers are big endian. count is the number of objects and sum the sum,
// modulo 2^64, of the CRC-64 of every object's key and record: a checksum
// over everything the checkpoint holds, kept up to date by each write from
// the records it replaces, so that an object lost, added, or changed (a
// page dropped, a byte damaged) is found by Load. Every record also
// carries its own CRC-32C, of its key and contents.
var (
	cpMetaBucket    = []byte("converge.checkpoint")
	cpObjectsBucket = []byte("converge.checkpoint.objects")
	cpStateKey      = []byte("state")
	cpFormatVersion = []byte("converge-checkpoint/1")
	cpFormatPrefix  = []byte("converge-checkpoint/")
	crc64Table      = crc64.MakeTable(crc64.ECMA)
)

// cpState is what a state record holds.
type cpState struct {
	revision         int64
	seen             time.Time
	count, sum       uint64
	identity, prefix string
}

// stateHeaderLen is the fixed part of a state record: checksum,
// revision, seen, count, sum.
const stateHeaderLen = checksumLen + 4*8

func encodeState(st cpState) []byte {
	b := make([]byte, stateHeaderLen, stateHeaderLen+8+len(st.identity)+len(st.prefix))
	binary.BigEndian.PutUint64(b[checksumLen:], uint64(st.revision))
	binary.BigEndian.PutUint64(b[checksumLen+8:], uint64(st.seen.UnixNano()))
	binary.BigEndian.PutUint64(b[checksumLen+16:], st.count)
	binary.BigEndian.PutUint64(b[checksumLen+24:], st.sum)
	for _, s := range []string{st.identity, st.prefix} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return seal(cpStateKey, b)
}

// decodeState checks and decodes a state record.
func decodeState(b []byte) (cpState, error) {
	if len(b) < stateHeaderLen || !intact(cpStateKey, b) {
		return cpState{}, fmt.Errorf("%w: the checkpoint's state record is damaged", ErrCorrupt)
	}
	st := cpState{
		revision: int64(binary.BigEndian.Uint64(b[checksumLen:])),
		seen:     time.Unix(0, int64(binary.BigEndian.Uint64(b[checksumLen+8:]))),
		count:    binary.BigEndian.Uint64(b[checksumLen+16:]),
		sum:      binary.BigEndian.Uint64(b[checksumLen+24:]),
	}
	rest := b[stateHeaderLen:]
	var texts [2]string
	for i := range texts {
		if len(rest) < 4 || uint64(binary.BigEndian.Uint32(rest)) > uint64(len(rest)-4) {
			return cpState{}, fmt.Errorf("%w: the checkpoint's state record is malformed", ErrCorrupt)
		}
		n := int(binary.BigEndian.Uint32(rest))
		texts[i], rest = string(rest[4:4+n]), rest[4+n:]
	}
	if len(rest) != 0 || st.revision < 0 {
		return cpState{}, fmt.Errorf("%w: the checkpoint's state record is malformed", ErrCorrupt)
	}
	st.identity, st.prefix = texts[0], texts[1]
	return st, nil
}

// recordSum is an object record's part of a state's sum.
func recordSum(key, rec []byte) uint64 {
	return crc64.Update(crc64.Checksum(key, crc64Table), crc64Table, rec)
}

// checkpointMarker is the value of the format key.
func checkpointMarker() []byte {
	return seal(formatKey, append(make([]byte, checksumLen), cpFormatVersion...))
}

// initCheckpoint creates the buckets of a new checkpoint file, with its
// format marker, in the transaction that makes the file.
func initCheckpoint(tx *bolt.Tx) error {
	meta, err := tx.CreateBucket(cpMetaBucket)
	if err != nil {
		return err
	}
	if _, err := tx.CreateBucket(cpObjectsBucket); err != nil {
		return err
	}
	return meta.Put(formatKey, checkpointMarker())
}

// cpBuckets returns the checkpoint's buckets in tx, after checking the
// format marker: a bbolt file without them holding other buckets (a
// store's file, someone else's) is ErrFormat, as is a checkpoint of an
// unknown version; one missing a bucket, or without buckets (OpenCheckpoint
// creates files with both), or with a damaged marker is ErrCorrupt.
func cpBuckets(tx *bolt.Tx) (meta, objects *bolt.Bucket, err error) {
	meta, objects = tx.Bucket(cpMetaBucket), tx.Bucket(cpObjectsBucket)
	if meta == nil || objects == nil {
		return nil, nil, noCheckpoint(tx, meta != nil || objects != nil)
	}
	f := meta.Get(formatKey)
	switch {
	case f == nil || !intact(formatKey, f):
		return nil, nil, fmt.Errorf("%w: the checkpoint's format marker is missing or damaged", ErrCorrupt)
	case bytes.Equal(f[checksumLen:], cpFormatVersion):
		return meta, objects, nil
	case bytes.HasPrefix(f[checksumLen:], cpFormatPrefix):
		return nil, nil, fmt.Errorf("%w: checkpoint format %q, want %q", ErrFormat, f[checksumLen:], cpFormatVersion)
	}
	return nil, nil, fmt.Errorf("%w: the checkpoint's format marker %q", ErrCorrupt, f[checksumLen:])
}

// noCheckpoint says why a file lacks a checkpoint's buckets: one of them
// there is damage, none there but others is someone else's file.
func noCheckpoint(tx *bolt.Tx, oneThere bool) error {
	if oneThere {
		return fmt.Errorf("%w: a bucket of the checkpoint is missing", ErrCorrupt)
	}
	var foreign []byte
	_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		foreign = name
		return nil
	})
	if foreign != nil {
		return fmt.Errorf("%w: not a checkpoint: a bbolt file with bucket %q", ErrFormat, foreign)
	}
	return fmt.Errorf("%w: a bbolt file without the checkpoint's buckets", ErrCorrupt)
}
