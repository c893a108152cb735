package boltstore_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	bolt "go.etcd.io/bbolt"
)

// fixtureHistory keeps the fixture's history short, so that its file has a
// compacted prefix as well as a retained history.
const fixtureHistory = 20

// contents is everything a reader can see of a store.
type contents struct {
	rev     int64
	objects []store.Object[*item]
	events  []store.Event[*item] // the retained history, from a watch
}

// buildFixture writes a real store file of a few pages (objects and history
// in pages of their own, pages freed by later writes, a compacted prefix)
// and returns its bytes and what a reader of it sees.
func buildFixture(t *testing.T) ([]byte, contents) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.db")
	s := openAt(t, path, boltstore.WithHistory(fixtureHistory))
	ctx := t.Context()
	// A value larger than a page: its leaf has overflow pages. Written
	// first, its history record is compacted away.
	_, err := s.Create(ctx, "big", &item{S: strings.Repeat("big", 2000)})
	mustNot(t, err)
	live := map[string]store.Object[*item]{}
	for i := range 40 {
		key := fmt.Sprintf("key/%02d", i%20)
		v := &item{N: i, S: strings.Repeat(string(rune('a'+i%26)), 100+i)}
		cur, ok := live[key]
		var err error
		switch {
		case !ok:
			live[key], err = s.Create(ctx, key, v)
		case i%7 == 0:
			_, err = s.Delete(ctx, key, cur.Revision)
			delete(live, key)
		default:
			live[key], err = s.Update(ctx, key, v, cur.Revision)
		}
		mustNot(t, err)
	}
	want, err := readAll(t, s, fixtureHistory)
	mustNot(t, err)
	mustNot(t, s.Close())
	data, err := os.ReadFile(path)
	mustNot(t, err)
	return data, want
}

// readAll reads everything of s: its revision, a List, a Get of each key,
// and the last history revisions through a watch. The first error ends it.
func readAll(t *testing.T, s *boltstore.Store[*item], history int64) (contents, error) {
	ctx := t.Context()
	var snap contents
	var err error
	if snap.rev, err = s.Revision(ctx); err != nil {
		return snap, err
	}
	var listRev int64
	if snap.objects, listRev, err = s.List(ctx, ""); err != nil {
		return snap, err
	}
	if listRev != snap.rev {
		return snap, fmt.Errorf("List at revision %d, Revision says %d", listRev, snap.rev)
	}
	for _, obj := range snap.objects {
		got, err := s.Get(ctx, obj.Key)
		if err != nil {
			return snap, err
		}
		if !reflect.DeepEqual(got, obj) {
			return snap, fmt.Errorf("Get(%q) = %+v, List has %+v", obj.Key, got, obj)
		}
	}
	w, err := s.Watch(ctx, "", max(0, snap.rev-history))
	if err != nil {
		return snap, err
	}
	defer w.Stop()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	for len(snap.events) < int(min(history, snap.rev)) {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				return snap, w.Err()
			}
			snap.events = append(snap.events, ev)
		case <-timer.C:
			return snap, errors.New("the history did not arrive")
		}
	}
	return snap, nil
}

// damageAllEnv, when set, makes the damaged-file suite change every byte of
// every page instead of a few dozen offsets per page (minutes instead of
// seconds).
const damageAllEnv = "BOLTSTORE_DAMAGE_ALL"

// damage is one damaged copy of the fixture, made when it is tested (the
// copies of BOLTSTORE_DAMAGE_ALL would not fit in memory together).
type damage struct {
	name string
	make func() []byte
	// mustFailOpen: the damage loses pages the file needs; Open must
	// refuse it.
	mustFailOpen bool
}

// damages returns the fixture truncated at every page boundary and in the
// middle of every page, emptied, and with one byte changed (inverted, or its
// lowest bit flipped) at several offsets of every page it uses.
func damages(data []byte) []damage {
	pageSize := int(binary.NativeEndian.Uint32(data[16+8:]))
	pages := len(data) / pageSize
	// The pages the file needs: the high-water mark of the newer meta.
	hwm := 0
	var txid uint64
	for p := range 2 {
		meta := data[p*pageSize+16:]
		if id := binary.NativeEndian.Uint64(meta[48:]); id >= txid {
			txid, hwm = id, int(binary.NativeEndian.Uint64(meta[40:]))
		}
	}
	ds := []damage{{name: "empty", make: func() []byte { return []byte{} }, mustFailOpen: true}}
	for p := range pages {
		for _, size := range []int{p * pageSize, p*pageSize + pageSize/2} {
			if size == 0 || size >= len(data) {
				continue
			}
			ds = append(ds, damage{
				name:         fmt.Sprintf("truncated to %d bytes", size),
				make:         func() []byte { return bytes.Clone(data[:size]) },
				mustFailOpen: size < hwm*pageSize || size%pageSize != 0,
			})
		}
	}
	offsets := []int{0, 1, 8, 10, 11, 12, 16, 17, 20, 24, 28, 32, 36, 40, 48, 56, 64, 72, 80, 96,
		128, 200, 256, 400, 512, 1000, 1024, 2048, 3000, pageSize - 100, pageSize - 1}
	if os.Getenv(damageAllEnv) != "" {
		offsets = offsets[:0]
		for off := range pageSize {
			offsets = append(offsets, off)
		}
	}
	// Inverting a byte changes it most; flipping its lowest bit makes the
	// smallest change (an element count one lower drops an element), tried
	// at the offsets of page headers and the first elements.
	small := []int{8, 10, 11, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64}
	if os.Getenv(damageAllEnv) != "" {
		small = offsets
	}
	// Pages past the high-water mark are room the file grew into: bbolt
	// never reads them, and damage there changes nothing.
	for flip, offs := range map[byte][]int{0xFF: offsets, 0x01: small} {
		for p := range hwm {
			for _, off := range offs {
				ds = append(ds, damage{
					name: fmt.Sprintf("byte %d of page %d xor %#x", off, p, flip),
					make: func() []byte {
						d := bytes.Clone(data)
						d[p*pageSize+off] ^= flip
						return d
					},
				})
			}
		}
	}
	return ds
}

// TestDamagedFilesAreReportedNeverPanicOrReset damages a real store file in
// every page, and checks each damaged copy: Open fails with ErrCorrupt and
// leaves the file as it was, or the store opens and every read either fails
// with ErrCorrupt or returns exactly what was written (the damage hit bytes
// that carry nothing). Never a panic or a crash, never a reset, never a
// value that was not written, and a refused file is not left locked. A
// file that lost pages it needs, or is empty, must be refused by Open.
func TestDamagedFilesAreReportedNeverPanicOrReset(t *testing.T) {
	data, want := buildFixture(t)
	dir := t.TempDir()
	var refused, failedRead, harmless int
	for i, d := range damages(data) {
		path := filepath.Join(dir, fmt.Sprintf("damaged-%d.db", i))
		damaged := d.make()
		mustNot(t, os.WriteFile(path, damaged, 0o600))
		s, err := openNoPanic(path)
		if err != nil {
			if !errors.Is(err, boltstore.ErrCorrupt) {
				t.Errorf("%s: Open: %v, want ErrCorrupt", d.name, err)
			}
			// A refused file holds nothing (no lock, no mapping): opened
			// again, it is refused again as damaged, not as locked.
			if _, err := openNoPanic(path, boltstore.WithLockTimeout(time.Millisecond)); !errors.Is(err, boltstore.ErrCorrupt) {
				t.Errorf("%s: Open again: %v, want ErrCorrupt", d.name, err)
			}
			assertUnchanged(t, path, damaged)
			mustNot(t, os.Remove(path))
			refused++
			continue
		}
		if d.mustFailOpen {
			t.Errorf("%s: Open succeeded", d.name)
		}
		got, err := readAll(t, s, fixtureHistory)
		switch {
		case err != nil && !errors.Is(err, boltstore.ErrCorrupt):
			t.Errorf("%s: read: %v, want ErrCorrupt", d.name, err)
		case err != nil:
			failedRead++
		case !reflect.DeepEqual(got, want):
			t.Errorf("%s: the store opened and reads something else than was written:\ngot  %+v\nwant %+v", d.name, got, want)
		default:
			harmless++
		}
		mustNot(t, s.Close())
		mustNot(t, os.Remove(path))
	}
	t.Logf("file of %d pages of %d bytes: %d damaged files refused by Open, %d by a read, %d held everything that was written",
		len(data)/int(binary.NativeEndian.Uint32(data[24:])), binary.NativeEndian.Uint32(data[24:]), refused, failedRead, harmless)
}

// openNoPanic opens the store at path, reporting a panic as an error that
// matches nothing the test accepts.
func openNoPanic(path string, opts ...boltstore.Option) (s *boltstore.Store[*item], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("Open panicked: %v", p)
		}
	}()
	return boltstore.Open[*item](path, opts...)
}

// TestEmptyExistingFileIsRefusedNotReset: an existing empty file is damage
// (the store never leaves one: it creates files whole), not a new store.
func TestEmptyExistingFileIsRefusedNotReset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	mustNot(t, os.WriteFile(path, nil, 0o600))
	if _, err := boltstore.Open[*item](path); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Open of an empty file: %v, want ErrCorrupt", err)
	}
	assertUnchanged(t, path, nil)
}

// TestReadsMeetingDamageAfterOpenFail damages the open store's file behind
// its back, in both ways that can happen: a record changed by another
// writer, and the file truncated under the memory map (reads of the lost
// pages fault). Reads return ErrCorrupt; the process does not crash.
func TestReadsMeetingDamageAfterOpenFail(t *testing.T) {
	s, path := openTemp(t)
	ctx := t.Context()
	for i := range 200 {
		_, err := s.Create(ctx, fmt.Sprintf("key/%03d", i), &item{N: i, S: strings.Repeat("v", 200)})
		mustNot(t, err)
	}
	mustNot(t, boltstore.DamageRecord(s, "key/000"))
	if _, err := s.Get(ctx, "key/000"); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Get of a damaged record: %v, want ErrCorrupt", err)
	}
	if _, _, err := s.List(ctx, "key/"); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("List over a damaged record: %v, want ErrCorrupt", err)
	}

	// Every page but the two meta pages goes: reads of them fault.
	mustNot(t, os.Truncate(path, 2*4096))
	if _, err := s.Get(ctx, "key/150"); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Get from a file truncated under the store: %v, want ErrCorrupt", err)
	}
	if _, _, err := s.List(ctx, "key/1"); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("List of a file truncated under the store: %v, want ErrCorrupt", err)
	}
	if _, err := s.Revision(ctx); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("Revision of a file truncated under the store: %v, want ErrCorrupt", err)
	}
}

// TestFormat1FileIsConverted opens a file written in format 1 (records
// without checksums): its objects and history are read as they were, and
// the file is in format 3 afterwards, with an identity.
func TestFormat1FileIsConverted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	writeBolt(t, path, func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket([]byte("converge.meta"))
		if err != nil {
			return err
		}
		objects, err := tx.CreateBucket([]byte("converge.objects"))
		if err != nil {
			return err
		}
		history, err := tx.CreateBucket([]byte("converge.history"))
		if err != nil {
			return err
		}
		u64 := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
		value := []byte(`{"n":7,"s":"seven"}`)
		hist := func(typ byte, createRev int64, key string, value []byte) []byte {
			b := append([]byte{typ}, u64(createRev)...)
			b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
			return append(append(b, key...), value...)
		}
		return errors.Join(
			meta.Put([]byte("format"), []byte("converge-boltstore/1")),
			meta.Put([]byte("revision"), u64(2)),
			meta.Put([]byte("compacted"), u64(0)),
			// Format 1 had no object count: conversion counts them.
			objects.Put([]byte("a"), append(append(u64(1), u64(2)...), value...)),
			history.Put(u64(1), hist(1, 1, "a", []byte(`{"n":1,"s":"one"}`))),
			history.Put(u64(2), hist(2, 1, "a", value)),
		)
	})
	s := openAt(t, path)
	got, err := s.Get(t.Context(), "a")
	mustNot(t, err)
	if got.Revision != 2 || got.CreateRevision != 1 || *got.Value != (item{N: 7, S: "seven"}) {
		t.Fatalf("converted object %+v %+v", got, *got.Value)
	}
	w, err := s.Watch(t.Context(), "", 0)
	mustNot(t, err)
	defer w.Stop()
	if ev := nextEvent(t, w); ev.Type != store.Created || *ev.Object.Value != (item{N: 1, S: "one"}) {
		t.Fatalf("converted history: %v %+v", ev.Type, ev.Object)
	}
	id := identityOf(t, s)
	mustNot(t, s.Close())
	s = openAt(t, path)
	if again := identityOf(t, s); again != id {
		t.Fatalf("identity %q after reopening a converted file, was %q", again, id)
	}
	mustNot(t, s.Close())
	db, err := bolt.Open(path, 0o600, nil)
	mustNot(t, err)
	defer db.Close()
	mustNot(t, db.View(func(tx *bolt.Tx) error {
		if f := tx.Bucket([]byte("converge.meta")).Get([]byte("format")); !bytes.HasSuffix(f, []byte("converge-boltstore/3")) {
			return fmt.Errorf("format %q after conversion", f)
		}
		return nil
	}))
}
