// Package nilness tells whether a value handed to a constructor or method
// is nil in a way that would make its methods panic.
package nilness

import "reflect"

// Is reports whether v is nil, or an interface holding a nil pointer, map,
// slice, channel, function or unsafe pointer (a typed nil).
func Is(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return r.IsNil()
	}
	return false
}
