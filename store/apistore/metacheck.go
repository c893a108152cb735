package apistore

import (
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

// Bounds of a finalizer name, as Kubernetes bounds a qualified name: a
// name of at most 63 characters, after a prefix of at most 253.
const (
	maxFinalizerName   = 63
	maxFinalizerPrefix = 253
)

// checkMeta refuses metadata the layer does not store (see
// ValidateFinalizer): both garbage-collector finalizers together, a
// finalizer name that is not a qualified name or that is listed twice, an owner whose key is not a valid key, whose UID
// is not a create revision, or whose key is listed twice. Each error
// matches store.ErrInvalid and names the field at fault.
//
// What stored (the metadata of the object the write replaces; the zero
// Meta for a create) already lists is not checked again, as many times as
// it lists it: an object stored before a rule existed can still have its
// bad finalizers and owners removed, and be written with them meanwhile.
func checkMeta(m, stored Meta) error {
	if err := checkGCFinalizers(m.Finalizers); err != nil {
		return err
	}
	var errs []error
	known := counts(stored.Finalizers)
	seen := map[string]int{}
	for i, f := range m.Finalizers {
		seen[f]++
		if seen[f] <= known[f] {
			continue
		}
		field := fmt.Sprintf("metadata.finalizers[%d]", i)
		if seen[f] > 1 {
			errs = append(errs, &FieldError{field, fmt.Sprintf("%q is listed twice", f)})
		} else if err := ValidateFinalizer(f); err != nil {
			errs = append(errs, &FieldError{field, err.Error()})
		}
	}
	known = map[string]int{}
	for _, o := range stored.Owners {
		known[o.Key]++
	}
	seen = map[string]int{}
	for i, o := range m.Owners {
		seen[o.Key]++
		if seen[o.Key] <= known[o.Key] && containsOwner(stored.Owners, o) {
			continue
		}
		if err := checkOwner(o, seen[o.Key] > 1); err != nil {
			errs = append(errs, &FieldError{fmt.Sprintf("metadata.owners[%d]", i), err.Error()})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: apistore: metadata: %w", store.ErrInvalid, errors.Join(errs...))
}

// checkOwner refuses an owner with a bad key or UID, or one whose key is
// listed before.
func checkOwner(o Owner, twice bool) error {
	switch {
	case twice:
		return fmt.Errorf("owner %q is listed twice", o.Key)
	case store.ValidateKey(o.Key) != nil:
		return fmt.Errorf("owner key %q is not a valid key", o.Key)
	case o.UID < 1:
		return fmt.Errorf("owner %q has UID %d, want its create revision", o.Key, o.UID)
	}
	return nil
}

// counts returns how many times each name is listed.
func counts(names []string) map[string]int {
	c := map[string]int{}
	for _, n := range names {
		c[n]++
	}
	return c
}

// containsOwner reports whether owners lists o exactly.
func containsOwner(owners []Owner, o Owner) bool {
	for _, s := range owners {
		if s == o {
			return true
		}
	}
	return false
}

// ValidateFinalizer returns an error matching store.ErrInvalid unless
// name is a qualified name, as Kubernetes requires of finalizers: a name,
// or a prefix, '/' and a name. The name has 1 to 63 characters, ASCII
// letters, digits, '-', '_' and '.', and begins and ends with a letter or
// digit ("cleanup", "db_drop.v2"); the prefix is a DNS subdomain of at
// most 253 characters: lowercase labels of letters, digits and '-',
// beginning and ending with a letter or digit, joined by '.'
// ("postgres.converge.dev"). ForegroundFinalizer and OrphanFinalizer are
// qualified names.
func ValidateFinalizer(name string) error {
	prefix, local, ok := cutLast(name, '/')
	if ok && !isSubdomain(prefix) {
		return fmt.Errorf("%w: finalizer %.80q: the prefix before '/' must be a lowercase DNS subdomain of at most %d characters", store.ErrInvalid, name, maxFinalizerPrefix)
	}
	if !isQualifiedLocal(local) {
		return fmt.Errorf("%w: finalizer %.80q: want a qualified name: at most %d letters, digits, '-', '_' or '.', beginning and ending with a letter or digit, after an optional \"prefix/\"", store.ErrInvalid, name, maxFinalizerName)
	}
	return nil
}

// cutLast cuts s around its one sep: ok is false (and local is s) if s has
// no sep; a second sep stays in prefix, which then fails isSubdomain.
func cutLast(s string, sep byte) (prefix, local string, ok bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

// isQualifiedLocal reports whether s is the name part of a qualified name.
func isQualifiedLocal(s string) bool {
	if len(s) == 0 || len(s) > maxFinalizerName || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isSubdomain reports whether s is a DNS-1123 subdomain.
func isSubdomain(s string) bool {
	if len(s) == 0 || len(s) > maxFinalizerPrefix {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			if c := s[i]; !isLowerAlnum(c) && c != '-' {
				return false
			}
			continue
		}
		label := s[start:i]
		if len(label) == 0 || !isLowerAlnum(label[0]) || !isLowerAlnum(label[len(label)-1]) {
			return false
		}
		start = i + 1
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
func isAlnum(c byte) bool      { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }
