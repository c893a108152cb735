package apistore

// Kind tells the layer how to read and rewrite values of T: where their
// metadata is, and which part of a value is its spec (written by users)
// and which its status (written by the controller). It is the one thing a
// type provides to opt in; reconcile/kit/resource's Resource has one, and
// JSONKind serves any JSON object of the shape
// {"metadata": ..., "spec": ..., ...}, whose members other than metadata
// and spec are its status.
//
// Every method must be deterministic and must not change its arguments:
// values read from a store may be shared with it. Errors should match
// store.ErrInvalid (a value that has no readable metadata, say).
type Kind[T any] interface {
	// Meta returns v's metadata.
	Meta(v T) (Meta, error)
	// WithMeta returns a copy of v holding m as its metadata.
	WithMeta(v T, m Meta) (T, error)
	// SameSpec reports whether a and b have the same spec, as the store
	// would keep it (for a codec-backed store: the same encoding).
	SameSpec(a, b T) (bool, error)
	// Merge returns a copy of spec whose status is status's: the spec and
	// metadata of the first, the status of the second.
	Merge(spec, status T) (T, error)
}
