package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Column is a printer column of a kind: a header and where its cells come
// from in each object.
//
// Path walks the object from its top (members "metadata", "spec",
// "status", "observedGeneration", "conditions" for a resource.Resource):
// ".name" enters a member, "[T]" the element of an array of objects whose
// "type" is T (a condition). So ".status.phase", ".spec.database",
// ".conditions[Ready].status" and ".conditions[Ready].reason". A cell is
// the string found, other JSON values as written, "<none>" for nothing.
// Type "age" reads an RFC 3339 time and shows how long ago it was, as
// kubectl shows an age ("45s", "12m", "5h", "3d").
type Column struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type,omitempty"`
}

// segment is one step of a column's path: a member, or the element of an
// array whose "type" is typ.
type segment struct {
	member, typ string
}

// segments reads c's path.
func (c Column) segments() ([]segment, error) {
	rest := c.Path
	if !strings.HasPrefix(rest, ".") && !strings.HasPrefix(rest, "[") {
		return nil, fmt.Errorf("path %q: want .member or [Type] steps", c.Path)
	}
	var out []segment
	for rest != "" {
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			if end == 0 {
				return nil, fmt.Errorf("path %q: an empty member name", c.Path)
			}
			out, rest = append(out, segment{member: rest[1 : 1+end]}), rest[1+end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end <= 1 {
				return nil, fmt.Errorf("path %q: want [Type] with a type", c.Path)
			}
			out, rest = append(out, segment{typ: rest[1:end]}), rest[end+1:]
		default:
			return nil, fmt.Errorf("path %q: unexpected %q", c.Path, rest[:1])
		}
	}
	return out, nil
}

// check refuses a column without a name, with a path it cannot read, or
// of an unknown type.
func (c Column) check() error {
	switch {
	case c.Name == "":
		return errors.New("a column without a name")
	case c.Type != "" && c.Type != "age":
		return fmt.Errorf("column %q: type %q is not \"age\"", c.Name, c.Type)
	}
	_, err := c.segments()
	return err
}

// Cell returns the column's cell for obj, a JSON object, at now (for an
// age). A path that finds nothing, or a value obj cannot give (not JSON,
// an age that is not a time), is "<none>".
func (c Column) Cell(obj []byte, now time.Time) string {
	const none = "<none>"
	segs, err := c.segments()
	if err != nil {
		return none
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return none
	}
	for _, s := range segs {
		if v = step(v, s); v == nil {
			return none
		}
	}
	text, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return none
		}
		text = string(b)
	}
	if c.Type == "age" {
		t, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			return none
		}
		return Age(now.Sub(t))
	}
	return text
}

// step takes one step of a path in v; nil for nothing there.
func step(v any, s segment) any {
	if s.typ == "" {
		m, _ := v.(map[string]any)
		return m[s.member]
	}
	arr, _ := v.([]any)
	for _, e := range arr {
		if m, ok := e.(map[string]any); ok && m["type"] == s.typ {
			return m
		}
	}
	return nil
}

// Age shows d as kubectl shows an age: seconds under two minutes, minutes
// under two hours, hours under two days, then days; "0s" for a
// negative d (a clock behind the writer's).
func Age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// ColumnsFor returns the columns of the kind of key: the kind of the
// longest prefix of key, as admission chooses it; none if no kind matches.
func (r *Rules) ColumnsFor(key string) []Column {
	if r == nil {
		return nil
	}
	best := -1
	for i, k := range r.Kinds {
		if strings.HasPrefix(key, k.Prefix) && (best < 0 || len(k.Prefix) > len(r.Kinds[best].Prefix)) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return r.Kinds[best].Columns
}
