package apistore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/converge-go/converge/store"
)

// ErrRejected: a kind's admission refused the object (Admission.Validate,
// ValidateStatus or ValidateKey, or Admission.Default failed), and
// nothing was stored. The error also matches store.ErrInvalid, its message names
// the key and the fields at fault, and errors.As finds each FieldError the
// rule returned.
var ErrRejected = errors.New("apistore: rejected")

// Admission is a kind's strategy where objects are written, as the API
// server's BeforeCreate and BeforeUpdate: the layer runs it on every write
// of a key it is registered for (WithAdmission), before anything is
// stored, so that a bad object is refused at the door rather than found
// by its controller. Every hook may be nil; each must be deterministic,
// must not change its argument (values may be shared with the store), and
// must not block.
//
//   - Default returns the value with the spec's defaults filled in. It
//     runs first, on the value a Create, Update or Apply would store, and
//     what it returns is validated and stored. It must not refuse
//     anything a Validate would: filling defaults is its one job.
//   - Validate checks the value's spec (and any other member a spec write
//     stores), on Create, and on Update, Replace and Apply when the spec
//     written differs from the stored one: an object stored before its
//     rule existed keeps its spec through writes that do not change it,
//     so a controller can still remove its finalizers.
//   - ValidateStatus checks the status a write would store: that of an
//     UpdateStatus (over the stored spec), and that of a Create.
//   - ValidateKey checks the key of an object to create (a Create, or an
//     Apply that creates): a kind whose key names something (a role, a
//     database) refuses a name it cannot have before anything is stored.
//     A key never changes, so no other write runs it.
//
// A hook's error refuses the write with an error matching ErrRejected and
// store.ErrInvalid; return FieldErrors (joined with errors.Join if
// several) so that the message names each field at fault. No hook runs
// on a delete.
type Admission[T any] struct {
	Default        func(v T) (T, error)
	Validate       func(v T) error
	ValidateStatus func(v T) error
	ValidateKey    func(key string) error
}

// Option configures New.
type Option[T any] func(*options[T])

// options is what New's options set.
type options[T any] struct {
	admissions []prefixed[T]
}

// prefixed is an Admission with the key prefix it serves.
type prefixed[T any] struct {
	prefix string
	a      Admission[T]
}

// WithAdmission registers a kind's Admission for the keys under prefix
// ("" for every key). Where several prefixes match a key, the longest
// wins; registering a prefix again replaces its Admission.
func WithAdmission[T any](prefix string, a Admission[T]) Option[T] {
	return func(o *options[T]) {
		for i := range o.admissions {
			if o.admissions[i].prefix == prefix {
				o.admissions[i].a = a
				return
			}
		}
		o.admissions = append(o.admissions, prefixed[T]{prefix, a})
	}
}

// admission returns the Admission registered for key: that of the longest
// prefix of key, or the zero Admission, which admits everything.
func (o *options[T]) admission(key string) Admission[T] {
	best, found := -1, Admission[T]{}
	for _, p := range o.admissions {
		if strings.HasPrefix(key, p.prefix) && len(p.prefix) > best {
			best, found = len(p.prefix), p.a
		}
	}
	return found
}

// admitSpec returns value defaulted, after validating it, for a spec
// write of key.
func (s *Store[T]) admitSpec(key string, value T) (T, error) {
	a := s.opts.admission(key)
	if a.Default != nil {
		v, err := a.Default(value)
		if err != nil {
			return value, rejected(key, "defaulting", err)
		}
		value = v
	}
	if a.Validate != nil {
		if err := a.Validate(value); err != nil {
			return value, rejected(key, "spec", err)
		}
	}
	return value, nil
}

// admitKey validates key, for a write that creates it.
func (s *Store[T]) admitKey(key string) error {
	if a := s.opts.admission(key); a.ValidateKey != nil {
		if err := a.ValidateKey(key); err != nil {
			return rejected(key, "key", err)
		}
	}
	return nil
}

// admitStatus validates the status of value, for a write of key that
// stores it.
func (s *Store[T]) admitStatus(key string, value T) error {
	if a := s.opts.admission(key); a.ValidateStatus != nil {
		if err := a.ValidateStatus(value); err != nil {
			return rejected(key, "status", err)
		}
	}
	return nil
}

// rejectedError is the error of a write admission refused: it matches
// ErrRejected and store.ErrInvalid, and unwraps to the hook's error.
type rejectedError struct {
	key, what string
	err       error
}

func (e *rejectedError) Error() string {
	return fmt.Sprintf("apistore: %s of %q rejected: %v", e.what, e.key, e.err)
}

func (e *rejectedError) Unwrap() []error { return []error{ErrRejected, store.ErrInvalid, e.err} }

// rejected returns the error of a write of key whose admission (the
// phase what) failed with err.
func rejected(key, what string, err error) error {
	return &rejectedError{key: key, what: what, err: err}
}

// FieldError is one field of an object that a rule refuses: its path from
// the object's top ("spec.connectionLimit", "spec.members[2].name",
// "metadata.finalizers[0]") and the reason. It matches store.ErrInvalid;
// a refusal by a kind's Admission matches ErrRejected as well. A client
// of a store served with the layer finds it with errors.As too.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Is reports whether target is store.ErrInvalid.
func (e *FieldError) Is(target error) bool { return errors.Is(target, store.ErrInvalid) }

// FieldErrorf returns a FieldError for field, its reason formatted as
// fmt.Sprintf does.
func FieldErrorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// admitCreate runs the key's admission over a value to create (key,
// defaults, spec and status rules), then checks its metadata; it returns
// the value to store and its metadata.
func (s *Store[T]) admitCreate(key string, value T) (T, Meta, error) {
	if _, err := s.meta(value); err != nil {
		return value, Meta{}, err
	}
	if err := s.admitKey(key); err != nil {
		return value, Meta{}, err
	}
	value, err := s.admitSpec(key, value)
	if err == nil {
		err = s.admitStatus(key, value)
	}
	if err != nil {
		return value, Meta{}, err
	}
	m, err := s.meta(value)
	if err == nil {
		err = checkMeta(m, Meta{})
	}
	return value, m, err
}

// admitUpdate runs the key's spec admission over a value written over
// storedValue, unless it leaves the spec as stored (an object stored
// before its rule keeps its spec through writes that do not change it),
// then checks its metadata against the stored metadata; it returns the
// value to store and its metadata.
func (s *Store[T]) admitUpdate(key string, value, storedValue T, stored Meta) (T, Meta, error) {
	same, err := s.kind.SameSpec(value, storedValue)
	if err != nil {
		return value, Meta{}, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	if !same {
		if value, err = s.admitSpec(key, value); err != nil {
			return value, Meta{}, err
		}
	}
	m, err := s.meta(value)
	if err == nil {
		err = checkMeta(m, stored)
	}
	return value, m, err
}
