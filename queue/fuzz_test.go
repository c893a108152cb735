package queue

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// model is the reference the fuzz test compares the queue with: the
// package's contract written as plainly as possible, with no heaps and no
// recycling.
type model struct {
	now     time.Duration
	keys    map[int]*modelKey
	ready   []int // in order of becoming ready
	counter int   // orders delays that share a deadline
}

type modelKey struct {
	priority   int
	waiting    bool
	processing bool
	dirty      bool
	hasDelay   bool
	deadline   time.Duration
	delayOrder int
}

func (m *model) queued(k *modelKey) bool { return k.waiting || k.hasDelay || k.dirty }

func (m *model) key(k int, priority int) *modelKey {
	mk, ok := m.keys[k]
	switch {
	case !ok:
		mk = &modelKey{priority: priority}
		m.keys[k] = mk
	case m.queued(mk):
		if priority > mk.priority && mk.waiting {
			// A waiting key whose priority rises moves to the back of
			// its new priority's line.
			m.ready = slices.DeleteFunc(m.ready, func(x int) bool { return x == k })
			m.ready = append(m.ready, k)
		}
		mk.priority = max(mk.priority, priority)
	default:
		mk.priority = priority
	}
	return mk
}

func (m *model) makeReady(k int, mk *modelKey) {
	mk.waiting = true
	m.ready = append(m.ready, k)
}

func (m *model) add(k, priority int) {
	mk := m.key(k, priority)
	mk.hasDelay = false
	switch {
	case mk.processing:
		mk.dirty = true
	case !mk.waiting:
		m.makeReady(k, mk)
	}
}

func (m *model) addAfter(k, priority int, d time.Duration) {
	mk := m.key(k, priority)
	if mk.waiting || mk.dirty {
		return
	}
	deadline := m.now + d
	if mk.hasDelay {
		mk.deadline = min(mk.deadline, deadline)
		return
	}
	m.counter++
	mk.hasDelay, mk.deadline, mk.delayOrder = true, deadline, m.counter
}

// get returns the key Get must hand out, if any.
func (m *model) get() (int, bool) {
	best := -1
	for i, k := range m.ready {
		if best < 0 || m.keys[k].priority > m.keys[m.ready[best]].priority {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	k := m.ready[best]
	m.ready = slices.Delete(m.ready, best, best+1)
	mk := m.keys[k]
	mk.waiting, mk.processing = false, true
	return k, true
}

func (m *model) done(k int) {
	mk, ok := m.keys[k]
	if !ok || !mk.processing {
		return
	}
	mk.processing = false
	switch {
	case mk.dirty:
		mk.dirty = false
		m.makeReady(k, mk)
	case mk.hasDelay:
	default:
		delete(m.keys, k)
	}
}

func (m *model) remove(k int) {
	mk, ok := m.keys[k]
	if !ok {
		return
	}
	mk.hasDelay, mk.dirty = false, false
	if mk.waiting {
		m.ready = slices.DeleteFunc(m.ready, func(x int) bool { return x == k })
		mk.waiting = false
	}
	if !mk.processing {
		delete(m.keys, k)
	}
}

func (m *model) delayedKeys() []int {
	var ks []int
	for k, mk := range m.keys {
		if mk.hasDelay {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b int) int {
		return cmp.Or(cmp.Compare(m.keys[a].deadline, m.keys[b].deadline), cmp.Compare(m.keys[a].delayOrder, m.keys[b].delayOrder))
	})
	return ks
}

func (m *model) advance(d time.Duration) {
	m.now += d
	for _, k := range m.delayedKeys() {
		mk := m.keys[k]
		if mk.deadline > m.now {
			break
		}
		mk.hasDelay = false
		if mk.processing {
			mk.dirty = true
		} else {
			m.makeReady(k, mk)
		}
	}
}

// check compares the queue's snapshot with the model.
func (m *model) check(t *testing.T, q *Queue[int]) {
	t.Helper()
	var wantWaiting, wantProcessing []int
	// Waiting keys in hand-out order: priority, then order of readiness.
	wantWaiting = append(wantWaiting, m.ready...)
	slices.SortStableFunc(wantWaiting, func(a, b int) int { return cmp.Compare(m.keys[b].priority, m.keys[a].priority) })
	var gotWaiting, gotDelayed, gotProcessing []int
	for _, it := range q.View().Snapshot() {
		mk, ok := m.keys[it.Key]
		require.True(t, ok, "queue has key %d, model does not", it.Key)
		require.Equal(t, mk.dirty, it.Dirty, "dirty mark of key %d", it.Key)
		require.Equal(t, mk.priority, it.Priority, "priority of key %d", it.Key)
		switch it.State {
		case Waiting:
			gotWaiting = append(gotWaiting, it.Key)
		case Delayed:
			gotDelayed = append(gotDelayed, it.Key)
		case Processing:
			gotProcessing = append(gotProcessing, it.Key)
		}
	}
	for k, mk := range m.keys {
		if mk.processing {
			wantProcessing = append(wantProcessing, k)
		}
	}
	var wantDelayed []int
	for _, k := range m.delayedKeys() {
		if !m.keys[k].processing {
			wantDelayed = append(wantDelayed, k)
		}
	}
	require.Equal(t, wantWaiting, gotWaiting, "waiting keys")
	require.Equal(t, wantDelayed, gotDelayed, "delayed keys")
	require.ElementsMatch(t, wantProcessing, gotProcessing, "processing keys")
	require.Equal(t, len(m.ready), q.View().Len())
	m.checkWalks(t, q, wantWaiting, wantDelayed, wantProcessing)
}

// checkWalks compares with the model what the queue's other views report:
// States, Items, Processing, Stats and DueByPriority, which walk the ready
// rings, the delay heap and the processing list rather than the key map.
func (m *model) checkWalks(t *testing.T, q *Queue[int], waiting, delayed, processing []int) {
	t.Helper()
	want := map[int]State{}
	for _, k := range waiting {
		want[k] = Waiting
	}
	for _, k := range delayed {
		want[k] = Delayed
	}
	for _, k := range processing {
		want[k] = Processing
	}
	got := map[int]State{}
	q.View().States(func(h Handout[int], s State) {
		k := h.Key
		_, dup := got[k]
		require.False(t, dup, "States reports key %d twice", k)
		got[k] = s
	})
	require.Equal(t, want, got, "States")
	got = map[int]State{}
	for _, it := range q.Items() {
		got[it.Key] = it.State
	}
	require.Equal(t, want, got, "Items")
	var gotProcessing []int
	for _, it := range q.View().Processing() {
		require.Equal(t, Processing, it.State)
		gotProcessing = append(gotProcessing, it.Key)
	}
	require.ElementsMatch(t, processing, gotProcessing, "Processing")
	st := q.View().Stats()
	require.Equal(t, len(delayed), st.Delayed, "Stats.Delayed")
	require.Equal(t, len(processing), st.Processing, "Stats.Processing")
	wantDue := map[int]int{}
	for _, k := range waiting {
		wantDue[m.keys[k].priority]++
	}
	for _, k := range processing {
		if m.keys[k].dirty {
			wantDue[m.keys[k].priority]++
		}
	}
	gotDue := map[int]int{}
	q.View().DueByPriority(func(p, n int) { gotDue[p] = n })
	require.Equal(t, wantDue, gotDue, "DueByPriority")
}

// FuzzQueue applies a random sequence of operations to the queue and to the
// model, inside a synctest bubble so that time is deterministic, and
// compares them after every step. Each operation is three bytes: opcode,
// key, argument; opcode 7 is an AddBatch of three keys, after a Grow if
// the argument is 128 or more.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 1, 0, 3, 0, 0, 0, 1, 0, 4, 1, 0, 0, 1, 0})
	f.Add([]byte{1, 2, 5, 1, 2, 3, 6, 0, 9, 3, 0, 0, 0, 2, 0, 6, 0, 9, 3, 0, 0})
	f.Add([]byte{2, 1, 7, 2, 2, 200, 3, 0, 0, 5, 1, 0, 3, 0, 0, 0, 1, 0, 4, 1, 0})
	f.Add([]byte{0, 1, 0, 3, 0, 0, 1, 1, 2, 6, 0, 3, 0, 1, 0, 4, 1, 0, 3, 0, 0, 4, 1, 0})
	f.Add([]byte{1, 0, 1, 1, 1, 1, 1, 2, 1, 6, 0, 1, 3, 0, 0, 3, 0, 0, 3, 0, 0, 5, 0, 0})
	f.Add([]byte{7, 6, 45, 3, 0, 0, 7, 7, 3, 4, 6, 0, 6, 0, 15, 3, 0, 0, 4, 7, 0, 3, 0, 0})
	f.Add([]byte{7, 1, 200, 3, 0, 0, 0, 5, 1, 7, 3, 131, 3, 0, 0, 4, 1, 0, 3, 0, 0, 5, 2, 0})
	f.Fuzz(fuzzOne)
}

func fuzzOne(t *testing.T, ops []byte) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[int]{AgingAfter: -1})
		m := &model{keys: map[int]*modelKey{}}
		for len(ops) >= 3 {
			op, k, arg := ops[0]%8, int(ops[1]%8), int(ops[2])
			ops = ops[3:]
			prio := arg%3 - 1
			d := time.Duration(arg%16+1) * time.Millisecond
			switch op {
			case 0:
				q.AddWith(k, AddOptions{Priority: prio})
				m.add(k, prio)
			case 1:
				q.AddWith(k, AddOptions{Priority: prio, After: d})
				m.addAfter(k, prio, d)
			case 2:
				q.Add(k)
				m.add(k, 0)
			case 3:
				want, ok := m.get()
				if !ok {
					continue
				}
				got, err := q.Get(context.Background())
				require.NoError(t, err)
				require.Equal(t, want, got, "Get")
			case 4:
				q.Done(k)
				m.done(k)
			case 5:
				q.Remove(k)
				m.remove(k)
			case 6:
				advance(d)
				synctest.Wait()
				m.advance(d)
			case 7:
				// Three keys in one AddBatch, each with its own priority
				// and, for some, a delay: the model applies them one by one.
				// An arg of 128 or more makes room for keys first, which
				// the model does not see: Grow changes nothing observable.
				if arg >= 128 {
					q.Grow(arg - 120)
				}
				var adds []BatchAdd[int]
				for j := range 3 {
					key, p := (k+j)%8, (arg>>j)%3-1
					o := AddOptions{Priority: p}
					if arg>>(j+3)&1 == 1 {
						o.After = time.Duration(j+1) * d
						m.addAfter(key, p, o.After)
					} else {
						m.add(key, p)
					}
					adds = append(adds, BatchAdd[int]{key, o})
				}
				q.AddBatch(adds)
			}
			m.check(t, q)
		}
		q.ShutDown()
	})
}
