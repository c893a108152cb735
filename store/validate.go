package store

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest key, in bytes, that any Store accepts.
const MaxKeyLen = 1024

// DefaultMaxValueSize is the largest encoded value, in bytes, that the byte
// backends accept unless configured otherwise (etcd's default request limit
// is 1.5 MiB; this leaves room for the key and the transaction).
const DefaultMaxValueSize = 1 << 20

// ValidateKey reports whether key is acceptable to every Store: not empty, at
// most MaxKeyLen bytes, valid UTF-8, no NUL byte. The error matches ErrInvalid.
// It does not allocate when key is valid.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key of %d bytes exceeds the maximum of %d", ErrInvalid, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalid, key)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: key %q contains a NUL byte", ErrInvalid, key)
	}
	return nil
}

// ValidatePrefix reports whether prefix is acceptable for List and Watch: like
// a key, except that the empty prefix (everything) is allowed.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := ValidateKey(prefix); err != nil {
		return fmt.Errorf("prefix: %w", err)
	}
	return nil
}

// ValidateValue reports whether v is a nil pointer, map, slice, interface,
// channel or function; such values are refused with ErrInvalid. It does not
// allocate for non-nil values.
func ValidateValue[T any](v T) error {
	if isNil(v) {
		return fmt.Errorf("%w: nil value of type %s", ErrInvalid, reflect.TypeFor[T]())
	}
	return nil
}

// ValidateRevision reports whether rev can be a revision argument (the
// expected revision of Update and Delete, the start of a Watch): revisions are
// never negative. The error matches ErrInvalid.
func ValidateRevision(rev int64) error {
	if rev < 0 {
		return fmt.Errorf("%w: negative revision %d", ErrInvalid, rev)
	}
	return nil
}

// ValidateGuards checks the keys and revisions of guards.
func ValidateGuards(guards []Guard) error {
	for _, g := range guards {
		if err := ValidateKey(g.Key); err != nil {
			return fmt.Errorf("guard: %w", err)
		}
		if g.Revision < 0 {
			return fmt.Errorf("%w: guard on %q has negative revision %d", ErrInvalid, g.Key, g.Revision)
		}
	}
	return nil
}

// isNil reports whether v is a nil value of a nillable kind. Pointer-shaped
// kinds convert to an interface without allocating; a slice is inspected
// through a pointer to the local copy, which does not escape.
func isNil[T any](v T) bool {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return reflect.ValueOf(any(v)).IsNil()
	case reflect.Slice:
		return reflect.ValueOf(&v).Elem().IsNil()
	case reflect.Interface:
		return any(v) == nil
	}
	return false
}
