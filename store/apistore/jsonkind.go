package apistore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/converge-go/converge/internal/exactjson"
	"github.com/converge-go/converge/store"
)

// JSONKind is the Kind of JSON objects held as json.RawMessage, for a
// store server that does not know the Go type of what it stores:
//
//	{"metadata": {"generation": 2, "finalizers": ["app/cleanup"]},
//	 "spec": {"replicas": 3},
//	 "status": {"ready": 3}, "observedGeneration": 2}
//
// "metadata" is Meta as JSON; "spec" is the spec; every other member is
// the status. A value without metadata has the zero Meta, one without spec
// the spec null.
//
// Specs are compared as JSON values: the same whatever the order of
// members and the insignificant whitespace, strings by their text (an
// escape is the character it stands for), numbers exactly as decimals (1,
// 1.0 and 10e-1 are one number; 9007199254740993 and 9007199254740992 are
// two, though float64 cannot tell them apart).
//
// Values the layer writes (WithMeta, Merge) have their members in one
// order: "metadata", "spec", then the status members sorted by name; each
// member's value is as written with its insignificant whitespace removed.
// So the same object, whatever the order of its top-level members, encodes
// to the same bytes.
//
// A value that is not a JSON object (not JSON, not UTF-8, another JSON
// value), that names a member twice in one object, nests deeper than
// 10000 levels, holds a number whose exponent has more than 18 digits, or
// whose metadata does not decode as Meta (a member Meta does not have
// included) fails every method with store.ErrInvalid. The zero JSONKind is
// ready to use.
type JSONKind struct{}

var (
	_ Kind[json.RawMessage]        = JSONKind{}
	_ PartialKind[json.RawMessage] = JSONKind{}
)

// The names of the members JSONKind reads.
const (
	metadataName = "metadata"
	specName     = "spec"
)

// parseObject parses v under the rule of exact JSON (see
// internal/exactjson), an escaped lone surrogate accepted as its code
// unit, since JSONKind keeps values as written.
func parseObject(v []byte) ([]member, error) {
	members, err := exactjson.Options{LoneSurrogates: true}.ParseObject(v)
	if err != nil {
		return nil, fmt.Errorf("%w: apistore: %w", store.ErrInvalid, err)
	}
	return members, nil
}

// member is a member of the top-level object of a value.
type member = exactjson.Member

// find returns the member called name, or nil.
func find(members []member, name string) *member {
	for i := range members {
		if members[i].Name == name {
			return &members[i]
		}
	}
	return nil
}

// Meta decodes v's "metadata" member.
func (JSONKind) Meta(v json.RawMessage) (Meta, error) {
	members, err := parseObject(v)
	if err != nil {
		return Meta{}, err
	}
	md := find(members, metadataName)
	if md == nil {
		return Meta{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(md.Raw))
	dec.DisallowUnknownFields()
	var m Meta
	if err := dec.Decode(&m); err != nil {
		return Meta{}, fmt.Errorf("%w: apistore: metadata: %v", store.ErrInvalid, err)
	}
	return m, nil
}

// WithMeta returns v with m as its "metadata" member.
func (JSONKind) WithMeta(v json.RawMessage, m Meta) (json.RawMessage, error) {
	members, err := parseObject(v)
	if err != nil {
		return nil, err
	}
	md, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: apistore: metadata: %v", store.ErrInvalid, err)
	}
	return compose(md, find(members, specName), members)
}

// SameSpec reports whether a and b have the same "spec" member as JSON
// values.
func (JSONKind) SameSpec(a, b json.RawMessage) (bool, error) {
	am, err := parseObject(a)
	if err != nil {
		return false, err
	}
	bm, err := parseObject(b)
	if err != nil {
		return false, err
	}
	return specOf(am).Equal(specOf(bm)), nil
}

// specOf returns the value of the spec member, null if there is none.
func specOf(members []member) exactjson.Value {
	if s := find(members, specName); s != nil {
		return s.Value
	}
	return exactjson.Value{Kind: exactjson.Null}
}

// Merge returns the metadata and spec of spec with the status members of
// status.
func (JSONKind) Merge(spec, status json.RawMessage) (json.RawMessage, error) {
	sm, err := parseObject(spec)
	if err != nil {
		return nil, err
	}
	tm, err := parseObject(status)
	if err != nil {
		return nil, err
	}
	var md []byte
	if m := find(sm, metadataName); m != nil {
		md = m.Raw
	}
	return compose(md, find(sm, specName), tm)
}

// HasSpec reports whether v has a "spec" member (PartialKind).
func (JSONKind) HasSpec(v json.RawMessage) (bool, error) {
	members, err := parseObject(v)
	if err != nil {
		return false, err
	}
	return find(members, specName) != nil, nil
}

// WithoutStatus returns v's metadata and spec alone (PartialKind).
func (JSONKind) WithoutStatus(v json.RawMessage) (json.RawMessage, error) {
	members, err := parseObject(v)
	if err != nil {
		return nil, err
	}
	var md []byte
	if m := find(members, metadataName); m != nil {
		md = m.Raw
	}
	return compose(md, find(members, specName), nil)
}

// compose writes an object of metadata md (none if nil), the spec member
// (none if nil) and the status members of from, in JSONKind's order.
func compose(md []byte, spec *member, from []member) (json.RawMessage, error) {
	var status []member
	for _, m := range from {
		if m.Name != metadataName && m.Name != specName {
			status = append(status, m)
		}
	}
	slices.SortFunc(status, func(a, b member) int { return cmp.Compare(a.Name, b.Name) })
	var buf bytes.Buffer
	buf.WriteByte('{')
	write := func(key, raw []byte) error {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.Write(key)
		buf.WriteByte(':')
		return json.Compact(&buf, raw)
	}
	var err error
	if md != nil {
		err = write([]byte(`"metadata"`), md)
	}
	if spec != nil && err == nil {
		err = write([]byte(`"spec"`), spec.Raw)
	}
	for _, m := range status {
		if err == nil {
			err = write(m.Key, m.Raw)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: apistore: %v", store.ErrInvalid, err)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
