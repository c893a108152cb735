package store

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// model is the obvious store: a map and a log of every change.
type model struct {
	objs    map[string]Object[*int]
	log     []Event[*int] // log[i] has revision i+1
	oldest  int64         // watches may start after oldest
	history int
}

func (m *model) rev() int64 { return int64(len(m.log)) }

func (m *model) guardsHold(gs []Guard) bool {
	for _, g := range gs {
		o := m.objs[g.Key]
		have := o.Revision
		if g.Created {
			have = o.CreateRevision
		}
		if have != g.Revision {
			return false
		}
	}
	return true
}

func (m *model) write(typ EventType, obj Object[*int]) {
	m.log = append(m.log, Event[*int]{Type: typ, Object: obj})
	if typ == Deleted {
		delete(m.objs, obj.Key)
	} else {
		m.objs[obj.Key] = obj
	}
	m.oldest = max(m.oldest, m.rev()-int64(m.history))
}

// errClass names the sentinel an error matches, for comparing outcomes.
func errClass(err error) string {
	for _, s := range []error{ErrNotFound, ErrExists, ErrConflict, ErrGuardFailed, ErrInvalid, ErrCompacted} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if err != nil {
		return "unexpected: " + err.Error()
	}
	return "ok"
}

var fuzzKeys = []string{"a", "b", "a/1", "a/2", "", "bad\xff"}

// FuzzMemory applies a random sequence of operations to a Memory store and to
// the model and compares every outcome and, after each step, the full state.
// Watches are checked against the model's log. Inputs are cut to 512
// operations so that each run stays fast.
//
// The target runs outside a synctest bubble: under the fuzzing engine a
// watch that never delivers shows up as a hung input, which the engine saves.
//
//	go test -run '^$' -fuzz FuzzMemory -fuzztime 60s ./store/
func FuzzMemory(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 0, 0, 3, 1, 0})
	f.Add([]byte{1, 1, 2, 1, 0, 3, 1, 1, 4, 0, 5, 1, 6, 2, 7, 0})
	f.Add([]byte("create, update, delete, recreate, watch, compact, list, guard"))
	f.Add([]byte{0, 0, 0, 1, 0, 2, 0, 3, 2, 0, 2, 1, 7, 3, 6, 1, 5, 0, 1, 0, 3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzMemory(t, data)
	})
}

func fuzzMemory(t *testing.T, data []byte) {
	ctx := t.Context()
	const history = 8
	s := NewMemory[*int](WithHistory(history), WithWatchLag(1000))
	defer s.Close()
	m := &model{objs: map[string]Object[*int]{}, history: history}
	n := 0
	val := func() *int { n++; v := n; return &v }

	data = data[:min(len(data), 1024)]
	for i := 0; i+1 < len(data); i += 2 {
		op, arg := data[i]%8, int(data[i+1])
		key := fuzzKeys[arg%len(fuzzKeys)]
		cur, exists := m.objs[key]
		// Expected revision: the current one, a stale one or a made-up one.
		rev := [...]int64{cur.Revision, cur.Revision - 1, int64(arg / 6), -1}[arg/len(fuzzKeys)%4]
		guard := Guard{Key: fuzzKeys[(arg/3)%4], Revision: m.objs[fuzzKeys[(arg/3)%4]].Revision, Created: arg%2 == 0}
		if guard.Created {
			guard.Revision = m.objs[guard.Key].CreateRevision
		}
		if arg%5 == 0 {
			guard.Revision++ // a failing guard
		}
		valid := ValidateKey(key) == nil
		step := fmt.Sprintf("step %d: op %d key %q rev %d guard %+v", i/2, op, key, rev, guard)

		switch op {
		case 0: // Create
			v := val()
			got, err := s.Create(ctx, key, v, guard)
			want := "ok"
			switch {
			case !valid:
				want = errClass(ErrInvalid)
			case !m.guardsHold([]Guard{guard}):
				want = errClass(ErrGuardFailed)
			case exists:
				want = errClass(ErrExists)
			default:
				obj := Object[*int]{Key: key, Value: v, Revision: m.rev() + 1, CreateRevision: m.rev() + 1}
				m.write(Created, obj)
				equal(t, step, obj, got)
			}
			equal(t, step, want, errClass(err))
		case 1: // Update
			v := val()
			got, err := s.Update(ctx, key, v, rev, guard)
			want := "ok"
			switch {
			case !valid || rev < 0:
				want = errClass(ErrInvalid)
			case !m.guardsHold([]Guard{guard}):
				want = errClass(ErrGuardFailed)
			case !exists:
				want = errClass(ErrNotFound)
			case rev != cur.Revision:
				want = errClass(ErrConflict)
			default:
				obj := Object[*int]{Key: key, Value: v, Revision: m.rev() + 1, CreateRevision: cur.CreateRevision}
				m.write(Updated, obj)
				equal(t, step, obj, got)
			}
			equal(t, step, want, errClass(err))
		case 2: // Delete
			got, err := s.Delete(ctx, key, rev, guard)
			want := "ok"
			switch {
			case !valid || rev < 0:
				want = errClass(ErrInvalid)
			case !m.guardsHold([]Guard{guard}):
				want = errClass(ErrGuardFailed)
			case !exists:
				want = errClass(ErrNotFound)
			case rev != cur.Revision:
				want = errClass(ErrConflict)
			default:
				cur.Revision = m.rev() + 1
				m.write(Deleted, cur)
				equal(t, step, cur.Revision, got)
			}
			equal(t, step, want, errClass(err))
		case 3: // Get
			got, err := s.Get(ctx, key)
			switch {
			case !valid:
				equal(t, step, errClass(ErrInvalid), errClass(err))
			case !exists:
				equal(t, step, errClass(ErrNotFound), errClass(err))
			default:
				equal(t, step, "ok", errClass(err))
				equal(t, step, cur, got)
			}
		case 4: // List by prefix
			prefix := key[:min(len(key), arg%3)]
			got, rev, err := s.List(ctx, prefix)
			if ValidatePrefix(prefix) != nil {
				equal(t, step, errClass(ErrInvalid), errClass(err))
				break
			}
			equal(t, step, "ok", errClass(err))
			equal(t, step, m.rev(), rev)
			equal(t, step, m.list(prefix), got)
		case 5: // Watch from some revision, read up to the current one
			after := m.rev() - int64(arg%(history+3))
			m.checkWatch(t, s, step, key[:min(len(key), arg%2)], after)
		case 6: // Compact
			to := m.rev() - int64(arg%4)
			err := s.Compact(ctx, to)
			if to < 0 {
				equal(t, step, errClass(ErrInvalid), errClass(err))
				break
			}
			equal(t, step, "ok", errClass(err))
			m.oldest = max(m.oldest, to)
		case 7: // Revision
			got, err := s.Revision(ctx)
			equal(t, step, "ok", errClass(err))
			equal(t, step, m.rev(), got)
		}

		all, rev, err := s.List(ctx, "")
		equal(t, step+": state", "ok", errClass(err))
		equal(t, step+": state", m.rev(), rev)
		equal(t, step+": state", m.list(""), all)
	}
	m.checkWatch(t, s, "final", "", m.oldest)
}

func (m *model) list(prefix string) []Object[*int] {
	var out []Object[*int]
	for _, k := range slices.Sorted(maps.Keys(m.objs)) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, m.objs[k])
		}
	}
	return out
}

func (m *model) checkWatch(t *testing.T, s *Memory[*int], step, prefix string, after int64) {
	t.Helper()
	w, err := s.Watch(t.Context(), prefix, after)
	switch {
	case ValidatePrefix(prefix) != nil || after < 0:
		equal(t, step+": watch", errClass(ErrInvalid), errClass(err))
		return
	case after < m.oldest:
		equal(t, step+": watch", errClass(ErrCompacted), errClass(err))
		return
	}
	equal(t, step+": watch", "ok", errClass(err))
	defer w.Stop()
	for _, ev := range m.log[after:] {
		if !strings.HasPrefix(ev.Object.Key, prefix) {
			continue
		}
		got, ok := <-w.Events()
		if !ok {
			t.Fatalf("%s: watch after %d ended early: %v", step, after, w.Err())
		}
		equal(t, step+": watch", ev, got)
	}
}

func equal[V any](t *testing.T, step string, want, got V) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%s: mismatch (-model +memory):\n%s", step, cmp.Diff(want, got))
	}
}
