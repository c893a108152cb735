package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math"
	"reflect"
	"slices"
)

// checkMutations compares every value the store retains with the
// fingerprint taken when it was written, reports each changed key once (as an
// error matching ErrMutated) and adopts the new fingerprints so that a change
// is not reported twice.
func (m *Memory[T]) checkMutations() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	reported := make(map[string]bool)
	for k, e := range m.objects {
		if fp := fingerprint(e.value); !bytes.Equal(fp, m.fps[k]) {
			errs = append(errs, fmt.Errorf("%w: value of %q stored at revision %d was changed in place", ErrMutated, k, e.rev))
			reported[k] = true
			m.fps[k] = fp
		}
	}
	m.hist.all(func(r *record[T]) {
		fp := fingerprint(r.ev.Object.Value)
		if bytes.Equal(fp, r.fp) {
			return
		}
		r.fp = fp
		if k := r.ev.Object.Key; !reported[k] {
			errs = append(errs, fmt.Errorf("%w: value of %q in the event of revision %d was changed in place", ErrMutated, k, r.ev.Object.Revision))
			reported[k] = true
		}
	})
	return errors.Join(errs...)
}

// fingerprint returns a SHA-256 digest of v's contents, following pointers,
// maps, slices and interfaces, and reading unexported fields. Two values have
// the same fingerprint if they hold the same data; functions and channels
// count by identity. A cycle is hashed as a reference back to its start.
func fingerprint[T any](v T) []byte {
	f := fingerprinter{h: sha256.New(), seen: make(map[visit]int)}
	f.value(reflect.ValueOf(&v).Elem())
	return f.h.Sum(nil)
}

type visit struct {
	ptr uintptr
	typ reflect.Type
	len int
}

type fingerprinter struct {
	h    hash.Hash
	seen map[visit]int
	buf  [8]byte
}

func (f *fingerprinter) u64(x uint64) {
	binary.LittleEndian.PutUint64(f.buf[:], x)
	f.h.Write(f.buf[:])
}

func (f *fingerprinter) str(s string) {
	f.u64(uint64(len(s)))
	f.h.Write([]byte(s))
}

// enter pushes a reference on the stack of references being walked; it
// returns false, after writing a back-reference, if the reference is already
// on it (a cycle). Only ancestors are tracked, so a reference shared by two
// siblings is hashed twice and the digest does not depend on map order.
func (f *fingerprinter) enter(v visit) bool {
	if depth, ok := f.seen[v]; ok {
		f.u64(math.MaxUint64)
		f.u64(uint64(depth))
		return false
	}
	f.seen[v] = len(f.seen)
	return true
}

func (f *fingerprinter) leave(v visit) { delete(f.seen, v) }

func (f *fingerprinter) value(v reflect.Value) {
	if !v.IsValid() {
		f.u64(0)
		return
	}
	f.u64(uint64(v.Kind()))
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			f.u64(1)
		} else {
			f.u64(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.u64(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		f.u64(v.Uint())
	case reflect.Float32, reflect.Float64:
		f.u64(math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		f.u64(math.Float64bits(real(c)))
		f.u64(math.Float64bits(imag(c)))
	case reflect.String:
		f.str(v.String())
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		f.u64(uint64(v.Pointer()))
	case reflect.Pointer:
		if v.IsNil() {
			f.u64(0)
			return
		}
		f.u64(1)
		if vis := (visit{v.Pointer(), v.Type(), 0}); f.enter(vis) {
			f.value(v.Elem())
			f.leave(vis)
		}
	case reflect.Interface:
		if v.IsNil() {
			f.u64(0)
			return
		}
		f.u64(1)
		f.str(v.Elem().Type().String())
		f.value(v.Elem())
	case reflect.Array:
		f.list(v)
	case reflect.Slice:
		if v.IsNil() {
			f.u64(0)
			return
		}
		f.u64(1)
		if vis := (visit{v.Pointer(), v.Type(), v.Len()}); f.enter(vis) {
			f.list(v)
			f.leave(vis)
		}
	case reflect.Map:
		if v.IsNil() {
			f.u64(0)
			return
		}
		f.u64(1)
		if vis := (visit{v.Pointer(), v.Type(), 0}); f.enter(vis) {
			f.mapEntries(v)
			f.leave(vis)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f.value(v.Field(i))
		}
	}
}

func (f *fingerprinter) list(v reflect.Value) {
	f.u64(uint64(v.Len()))
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
		// Bytes (a JSON document, say) in one write, not one value each.
		f.h.Write(v.Bytes())
		return
	}
	for i := range v.Len() {
		f.value(v.Index(i))
	}
}

// mapEntries hashes each entry on its own and feeds the sorted entry digests
// in, so that map iteration order does not matter.
func (f *fingerprinter) mapEntries(v reflect.Value) {
	digests := make([][]byte, 0, v.Len())
	it := v.MapRange()
	for it.Next() {
		sub := fingerprinter{h: sha256.New(), seen: f.seen}
		sub.value(it.Key())
		sub.value(it.Value())
		digests = append(digests, sub.h.Sum(nil))
	}
	slices.SortFunc(digests, bytes.Compare)
	f.u64(uint64(len(digests)))
	for _, d := range digests {
		f.h.Write(d)
	}
}
