package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/converge-go/converge/store"
	bolt "go.etcd.io/bbolt"
)

// formatMarker is the value of the format key: a checksum (of the key and
// the text) and the text, so that a damaged marker is told apart from the
// marker of a version this package does not know.
func formatMarker() []byte {
	return seal(formatKey, append(make([]byte, checksumLen), formatVersion...))
}

// checkFormat reads the format marker of the meta bucket and returns the
// file's format version: currentFormat, or 2 or 1 (which Open converts). An
// intact marker of a version this package does not know is ErrFormat, a
// damaged or missing marker ErrCorrupt. Format 1 markers had no checksum.
func checkFormat(meta *bolt.Bucket) (int, error) {
	f := meta.Get(formatKey)
	switch {
	case bytes.Equal(f, formatVersion1):
		return 1, nil
	case f == nil:
		return 0, fmt.Errorf("%w: no format marker", ErrCorrupt)
	case !intact(formatKey, f):
		return 0, fmt.Errorf("%w: damaged format marker %q", ErrCorrupt, f)
	}
	text := f[checksumLen:]
	switch {
	case bytes.Equal(text, formatVersion):
		return currentFormat, nil
	case bytes.Equal(text, formatVersion2):
		return 2, nil
	}
	v, ok := strings.CutPrefix(string(text), formatPrefix)
	if ok && v != "" && strings.Trim(v, "0123456789") == "" {
		return 0, fmt.Errorf("%w: format %q, want %q", ErrFormat, text, formatVersion)
	}
	return 0, fmt.Errorf("%w: format marker %q", ErrCorrupt, text)
}

// migrate1 rewrites the records of a format 1 file (the same records
// without checksums) with their checksums, and counts the objects. It runs
// in Open's transaction, before addIdentity: the file is converted whole or
// not at all.
func migrate1(b txBuckets) error {
	type kv struct{ k, v []byte }
	var objects, history []kv
	if b.meta.Get(objectsKey) != nil {
		return fmt.Errorf("%w: format 1 file with an object count", ErrCorrupt)
	}
	err := b.objects.ForEach(func(k, v []byte) error {
		if len(v) < 16 {
			return fmt.Errorf("%w: format 1 object %q has a record of %d bytes", ErrCorrupt, k, len(v))
		}
		rec := encodeObject(string(k), int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:])), v[16:])
		objects = append(objects, kv{bytes.Clone(k), rec})
		return nil
	})
	if err != nil {
		return err
	}
	err = b.history.ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) < 13 || int(binary.BigEndian.Uint32(v[9:])) > len(v)-13 {
			return fmt.Errorf("%w: format 1 history record %x is malformed", ErrCorrupt, k)
		}
		keyLen := int(binary.BigEndian.Uint32(v[9:]))
		rec := encodeHistory(rawEvent{
			typ:       store.EventType(v[0]),
			createRev: int64(binary.BigEndian.Uint64(v[1:])),
			key:       string(v[13 : 13+keyLen]),
			value:     v[13+keyLen:],
			rev:       revFromKey(k),
		})
		history = append(history, kv{bytes.Clone(k), rec})
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range objects {
		if err := b.objects.Put(r.k, r.v); err != nil {
			return err
		}
	}
	for _, r := range history {
		if err := b.history.Put(r.k, r.v); err != nil {
			return err
		}
	}
	return putCounter(b.meta, objectsKey, int64(len(objects)))
}

// checkRecords reads every record of the store, as Open does once: each
// history record from compacted+1 to rev is there, nothing else is, and
// each is intact; each object is intact, no newer than rev, and, if its
// revision is still in the history, matches the history record of that
// revision; and the objects are as many as the meta bucket counts (so that
// an element dropped from a page is seen). It costs one read of every
// record.
func checkRecords(b txBuckets, rev, compacted int64) error {
	want := compacted + 1
	err := b.history.ForEach(func(k, v []byte) error {
		if len(k) != 8 || revFromKey(k) != want {
			return fmt.Errorf("%w: history record %x where revision %d was expected", ErrCorrupt, k, want)
		}
		if _, err := decodeHistory(want, v); err != nil {
			return err
		}
		want++
		return nil
	})
	if err != nil {
		return err
	}
	if want != rev+1 {
		return fmt.Errorf("%w: history ends at revision %d, the store is at %d", ErrCorrupt, want-1, rev)
	}
	count, err := readCounter(b.meta, objectsKey)
	if err != nil {
		return err
	}
	var n int64
	err = b.objects.ForEach(func(k, v []byte) error {
		n++
		_, objRev, value, err := decodeObject(string(k), v)
		if err != nil {
			return err
		}
		if objRev > rev {
			return fmt.Errorf("%w: object %q at revision %d, after the store's %d", ErrCorrupt, k, objRev, rev)
		}
		if objRev <= compacted {
			return nil
		}
		ev, err := decodeHistory(objRev, b.history.Get(revKey(objRev)))
		if err != nil {
			return err
		}
		if ev.key != string(k) || ev.typ == store.Deleted || !bytes.Equal(ev.value, value) {
			return fmt.Errorf("%w: object %q differs from its history record %d", ErrCorrupt, k, objRev)
		}
		return nil
	})
	if err == nil && n != count {
		err = fmt.Errorf("%w: %d objects, the store counts %d", ErrCorrupt, n, count)
	}
	return err
}
