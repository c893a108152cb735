package schema

import (
	"encoding/json"

	"github.com/converge-go/converge/store/apistore"
)

// OptionsOf returns r's options for a layer of Go values of T (a
// reconcile/kit/resource.Resource, say), whose hooks judge each value's
// encoding/json encoding, as a client sending it to a store server with
// the same rules would have it judged. Default decodes the defaulted
// encoding into a new T. A value that does not encode fails with an error
// matching store.ErrInvalid and ErrRejected.
func OptionsOf[T any](r *Rules) []apistore.Option[T] {
	if r == nil {
		return nil
	}
	var opts []apistore.Option[T]
	for _, k := range r.Kinds {
		opts = append(opts, apistore.WithAdmission(k.Prefix, typed[T](k.Admission())))
	}
	return opts
}

// typed returns a's hooks for values of T, through their JSON encoding.
func typed[T any](a apistore.Admission[json.RawMessage]) apistore.Admission[T] {
	var out apistore.Admission[T]
	if a.Default != nil {
		out.Default = func(v T) (T, error) {
			raw, err := encode(v)
			if err != nil {
				return v, err
			}
			d, err := a.Default(raw)
			if err != nil || string(d) == string(raw) {
				return v, err
			}
			var nv T
			if err := json.Unmarshal(d, &nv); err != nil {
				return v, apistore.FieldErrorf("spec", "the defaulted value does not decode: %v", err)
			}
			return nv, nil
		}
	}
	out.Validate = judgeTyped[T](a.Validate)
	out.ValidateStatus = judgeTyped[T](a.ValidateStatus)
	out.ValidateKey = a.ValidateKey
	return out
}

// judgeTyped returns validate for values of T, or nil if it is nil.
func judgeTyped[T any](validate func(json.RawMessage) error) func(T) error {
	if validate == nil {
		return nil
	}
	return func(v T) error {
		raw, err := encode(v)
		if err != nil {
			return err
		}
		return validate(raw)
	}
}

func encode(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, apistore.FieldErrorf("", "the value does not encode: %v", err)
	}
	return raw, nil
}
