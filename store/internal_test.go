package store

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The history ring retains exactly the last revisions up to its limit, as a
// plain slice would, through growth, wrap-around, compaction and regrowth
// after compaction.
func TestHistoryRingRetainsExactlyTheLastRevisionsThroughWrapAndCompaction(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 8} {
		h := newHistory[int](limit)
		model := []int64{} // retained revisions
		var rev int64
		check := func() {
			t.Helper()
			require.Equal(t, rev-int64(len(model)), h.oldest(), "limit %d, revision %d", limit, rev)
			for _, r := range model {
				got, ok := h.at(r)
				require.True(t, ok, "revision %d retained", r)
				require.Equal(t, r, got.ev.Object.Revision)
			}
			_, ok := h.at(h.oldest())
			require.False(t, ok)
			_, ok = h.at(rev + 1)
			require.False(t, ok)
			all := []int64{}
			h.all(func(r *record[int]) { all = append(all, r.ev.Object.Revision) })
			require.Equal(t, model, all)
		}
		add := func(n int) {
			for range n {
				rev++
				h.add(record[int]{ev: Event[int]{Object: Object[int]{Revision: rev}}})
				model = append(model, rev)
				if len(model) > limit {
					model = model[1:]
				}
				check()
			}
		}
		compact := func(to int64) {
			h.compact(to)
			for len(model) > 0 && model[0] <= to {
				model = model[1:]
			}
			check()
		}
		add(limit / 2)
		compact(rev - 1)
		add(limit + 3)
		compact(rev - int64(limit)/2)
		add(2)
		compact(rev)
		add(limit)
		add(limit + 1)
	}
}

// The fingerprint behind the mutation check is equal for equal data however
// it is laid out in memory (cycles and shared pointers included), and
// changes with any reachable change: fields, unexported fields, map keys and
// values, slice elements and length (bytes too), dynamic types, nil-ness.
func TestFingerprintChangesWithAnyReachableDataAndOnlyWithIt(t *testing.T) {
	type node struct {
		Name   string
		hidden int
		Next   *node
		Kids   map[string]*node
		Any    any
		List   []int
		Raw    json.RawMessage
		bytes  []byte
	}
	build := func() *node {
		shared := &node{Name: "shared"}
		n := &node{Name: "root", hidden: 1, List: []int{1, 2}, Any: 3.5, Raw: json.RawMessage(`{}`), bytes: []byte("ab"),
			Kids: map[string]*node{"a": shared, "b": shared, "c": {Name: "c"}}}
		n.Next = n // a cycle
		return n
	}
	a, b := build(), build()
	require.Equal(t, fingerprint(a), fingerprint(b), "equal data, different pointers")
	for range 20 {
		require.Equal(t, fingerprint(a), fingerprint(a), "stable across map iteration orders")
	}

	changes := map[string]func(n *node){
		"field":            func(n *node) { n.Name = "x" },
		"unexported field": func(n *node) { n.hidden = 2 },
		"map value":        func(n *node) { n.Kids["a"].Name = "y" },
		"map key":          func(n *node) { n.Kids["d"] = n.Kids["c"]; delete(n.Kids, "c") },
		"slice element":    func(n *node) { n.List[1] = 3 },
		"slice length":     func(n *node) { n.List = n.List[:1] },
		"byte":             func(n *node) { n.Raw[0] = '[' },
		"unexported byte":  func(n *node) { n.bytes[1] = 'c' },
		"bytes length":     func(n *node) { n.bytes = n.bytes[:1] },
		"interface type":   func(n *node) { n.Any = int64(3) },
		"nil slice":        func(n *node) { n.List = nil },
		"cycle broken":     func(n *node) { n.Next = &node{Name: "root"} },
	}
	for name, change := range changes {
		n := build()
		before := fingerprint(n)
		change(n)
		require.NotEqual(t, before, fingerprint(n), name)
	}

	require.Equal(t, fingerprint([]int(nil)), fingerprint([]int(nil)))
	require.NotEqual(t, fingerprint([]int(nil)), fingerprint([]int{}))
	require.NotEqual(t, fingerprint("ab"), fingerprint("a"))
}
