package reconcile

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/queue"
	"github.com/converge-go/converge/store"
	"github.com/stretchr/testify/require"
)

// viewPrefix is the view of the model's controller.
const viewPrefix = "in/"

// Keys the model hands in: of the view, outside its prefix (some of which
// the store holds), and not store keys at all.
var (
	viewKeys    = []string{"in/a", "in/b", "in/c", "in/d", "in/e"}
	foreignKeys = []string{"out/a", "in", "inx/b", "roles/app"}
	invalidKeys = []string{"", "in/\xff", "in/a\x00", "in/" + strings.Repeat("z", store.MaxKeyLen)}
)

// viewModel knows what the primary store holds and checks every request a
// controller makes against it: reconciled only inside the view, Deleted
// only for a key the store does not hold, with the last value while the
// deletion is unreconciled and the zero Object for a key never held.
type viewModel struct {
	t       *testing.T
	primary store.Store[*item]
	rng     *rand.Rand // the driver's alone

	mu   sync.Mutex
	step int
	// last is the latest value of each key of the view the store has
	// held (the reconciler asks the store whether it holds it now); owed
	// marks a deletion no successful reconcile has seen yet.
	last map[string]int
	owed map[string]bool
	// handed is the step of the latest hand-in of each key of the view,
	// reconciled the step of its latest reconcile.
	handed, reconciled map[string]int
	refusals           int                 // keys outside the view handed in
	refused            map[string]struct{} // the shown form of each
	// deletedLast and deletedZero count the Deleted requests seen with a
	// last value and with the zero Object: the model must meet both.
	deletedLast, deletedZero int
	want                     int // the next value written
}

func newViewModel(t *testing.T, primary store.Store[*item], seed uint64) *viewModel {
	return &viewModel{t: t, primary: primary, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)),
		last: map[string]int{}, owed: map[string]bool{},
		handed: map[string]int{}, reconciled: map[string]int{}, refused: map[string]struct{}{}}
}

// withinView is the view as the model sees it.
func withinView(key string) bool {
	return store.ValidateKey(key) == nil && strings.HasPrefix(key, viewPrefix)
}

// Reconcile checks req against the store (which no one writes while a
// reconcile runs) and the model, and fails some first attempts.
func (m *viewModel) Reconcile(ctx context.Context, req Request[*item]) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := req.Key
	if !withinView(key) {
		m.t.Errorf("step %d: %q, outside the view, was reconciled (deleted %v)", m.step, shownKey(key), req.Deleted)
		return Result{}, nil
	}
	m.reconciled[key] = m.step
	obj, err := m.primary.Get(ctx, key)
	switch {
	case req.Deleted && !errors.Is(err, store.ErrNotFound):
		m.t.Errorf("step %d: %q reconciled as deleted while the store holds it (%v)", m.step, key, err)
	case req.Deleted && m.owed[key] && (req.Object.Value == nil || req.Object.Value.Want != m.last[key]):
		m.t.Errorf("step %d: deleted %q carries %+v, not its last value %d", m.step, key, req.Object, m.last[key])
	case req.Deleted && !m.owed[key] && req.Object.Value != nil && req.Object.Value.Want != m.last[key]:
		m.t.Errorf("step %d: deleted %q carries %+v, neither zero nor its last value", m.step, key, req.Object)
	case req.Deleted:
		if _, ever := m.last[key]; !ever && req.Object != (store.Object[*item]{}) {
			m.t.Errorf("step %d: %q, never held, carries %+v, not the zero Object", m.step, key, req.Object)
		}
	case err != nil || obj.Value.Want != req.Object.Value.Want:
		m.t.Errorf("step %d: %q reconciled with %+v while the store holds %+v (%v)", m.step, key, req.Object, obj, err)
	}
	if req.Deleted && req.Object.Value != nil {
		m.deletedLast++
	} else if req.Deleted {
		m.deletedZero++
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	if req.Retries == 0 && (int(h.Sum32())+m.step)%4 == 0 {
		return Result{}, errors.New("a first attempt fails")
	}
	if req.Deleted {
		m.owed[key] = false
	}
	return Result{}, nil
}

// hand records a hand-in of key, by any entry.
func (m *viewModel) hand(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if withinView(key) {
		m.handed[key] = m.step
	} else {
		m.refusals++
		m.refused[shownKey(key)] = struct{}{}
	}
}

// mapper is the FromStore mapper: a secondary object names the primary
// key it wakes in its Owner, whatever that key is.
func (m *viewModel) mapper(old, cur *store.Object[*item]) []string {
	var keys []string
	for _, o := range []*store.Object[*item]{old, cur} {
		if o != nil && (len(keys) == 0 || keys[0] != o.Value.Owner) {
			keys = append(keys, o.Value.Owner)
			m.hand(o.Value.Owner)
		}
	}
	return keys
}

// anyKey picks a key of any kind.
func (m *viewModel) anyKey() string {
	kinds := [][]string{viewKeys, viewKeys, foreignKeys, invalidKeys}
	keys := kinds[m.rng.IntN(len(kinds))]
	return keys[m.rng.IntN(len(keys))]
}

// write puts or deletes a random key of the view or a foreign one in the
// primary store, keeping the model in step.
func (m *viewModel) write() {
	keys := viewKeys
	if m.rng.IntN(3) == 0 {
		keys = foreignKeys
	}
	key := keys[m.rng.IntN(len(keys))]
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.primary.Get(context.Background(), key); err == nil && m.rng.IntN(2) == 0 {
		del(m.t, m.primary, key)
		m.owed[key] = withinView(key)
		return
	}
	m.want++
	put(m.t, m.primary, key, &item{Want: m.want})
	if withinView(key) {
		m.last[key], m.owed[key] = m.want, false
	}
}

// viewEntries are the ways a key comes into the model's controller.
type viewEntries struct {
	channel, fn chan string        // a FromChannel source, and a SourceFunc's
	secondary   store.Store[*item] // a FromStore source's store: Owner names the key
	c           *Controller[*item] // Enqueue
}

// source is the SourceFunc entry: it hands in what e.fn receives.
func (e *viewEntries) source(ctx context.Context, enqueue func(string)) error {
	for {
		select {
		case key := <-e.fn:
			enqueue(key)
		case <-ctx.Done():
			return nil
		}
	}
}

// handIn hands a random key of any kind to the controller by a random
// entry.
func (m *viewModel) handIn(e *viewEntries) {
	key := m.anyKey()
	switch m.rng.IntN(4) {
	case 0:
		m.hand(key)
		e.channel <- key
	case 1:
		m.hand(key)
		e.fn <- key
	case 2:
		m.mapThrough(e.secondary, key) // the mapper counts what it hands in
	default:
		m.hand(key)
		err := e.c.Enqueue(key)
		if withinView(key) != (err == nil) || err != nil && !errors.Is(err, ErrInvalid) {
			m.t.Errorf("Enqueue(%q) = %v", key, err)
		}
	}
}

// mapThrough creates, re-owns or deletes a secondary object so that the
// mapper hands in key (and the object's previous owner).
func (m *viewModel) mapThrough(s store.Store[*item], key string) {
	ctx := context.Background()
	sec := fmt.Sprintf("sec/%d", m.rng.IntN(3))
	obj, err := s.Get(ctx, sec)
	switch {
	case err != nil:
		_, err = s.Create(ctx, sec, &item{Owner: key})
	case m.rng.IntN(3) == 0:
		_, err = s.Delete(ctx, sec, obj.Revision)
	default:
		_, err = s.Update(ctx, sec, &item{Owner: key}, obj.Revision)
	}
	if err != nil && !errors.Is(err, store.ErrInvalid) { // a byte store may refuse a value it cannot encode
		m.t.Fatalf("secondary write of %s: %v", sec, err)
	}
}

// check asserts, after convergence, that every key of the view handed in
// was reconciled after it, every deletion was reconciled, and every key
// outside the view was counted as refused, in Health and Metrics.
func (m *viewModel) check(c *Controller[*item], metrics *countingMetrics) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, step := range m.handed {
		if m.reconciled[key] < step {
			m.t.Errorf("%q, of the view, handed in at step %d, last reconciled at step %d", key, step, m.reconciled[key])
		}
	}
	for key, owed := range m.owed {
		if owed {
			m.t.Errorf("the deletion of %q was never reconciled", key)
		}
	}
	if m.deletedLast == 0 || m.deletedZero == 0 || m.refusals == 0 {
		m.t.Errorf("the run missed a case: %d deletions with their last value, %d with none, %d refusals",
			m.deletedLast, m.deletedZero, m.refusals)
	}
	h := c.Health()
	require.Equal(m.t, m.refusals, h.Refused, "Health.Refused counts every key handed in outside the view")
	require.Equal(m.t, m.refusals, metrics.get("refused"), "Metrics.KeyRefused counts every key handed in outside the view")
	for _, key := range h.RefusedKeys {
		require.Contains(m.t, m.refused, key, "a key reported refused that was not handed in outside the view")
	}
}

// runViewModel drives a controller of viewPrefix over primary, with a
// channel source, a SourceFunc and a FromStore source over secondary,
// through random writes and hand-ins, each step left to settle.
func runViewModel(t *testing.T, primary, secondary store.Store[*item], seed uint64) {
	m := newViewModel(t, primary, seed)
	e := &viewEntries{channel: make(chan string), fn: make(chan string), secondary: secondary}
	metrics := &countingMetrics{}
	c, err := New[*item](primary, m, Options[*item]{Name: "view", Prefix: viewPrefix, Metrics: metrics,
		RateLimiter: queue.NewExponential[string](10*time.Millisecond, time.Second, 0),
		Sources:     []Source{FromChannel(e.channel), SourceFunc(e.source), FromStore(secondary, "sec/", m.mapper)}})
	require.NoError(t, err)
	e.c = c
	stop := start(t, c)
	for range 300 {
		m.mu.Lock()
		m.step++
		m.mu.Unlock()
		if m.rng.IntN(3) == 0 {
			m.write()
		} else {
			m.handIn(e)
		}
		synctest.Wait()
		if m.rng.IntN(8) == 0 {
			advance(time.Second) // retries come due
		}
	}
	advance(time.Minute)
	synctest.Wait()
	stop()
	m.check(c, metrics)
}

// The model of a controller's view: whatever keys come in by whatever
// entry (a channel source, a SourceFunc, a FromStore mapper, Enqueue) —
// of the view or not, valid store keys or not, held by the store, held
// then deleted, never held — every Deleted request is for a key of the
// view the store does not hold, carrying the last value while its
// deletion is unreconciled (the zero Object for a key never held); no key
// outside the view is ever reconciled, each is counted as refused; every
// key of the view handed in is reconciled. Over a memory store and a byte
// store (a View of a Memory[[]byte]).
func TestDeletedRequestsAreOnlyForKeysOfTheViewTheStoreDoesNotHold(t *testing.T) {
	backends := []struct {
		name string
		open func() store.Store[*item]
	}{
		{"memory", func() store.Store[*item] { return store.NewMemory[*item]() }},
		{"bytes", func() store.Store[*item] { return store.NewView[*item](store.NewMemory[[]byte](), nil) }},
	}
	for _, b := range backends {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("%s/seed-%d", b.name, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { runViewModel(t, b.open(), b.open(), seed) })
			})
		}
	}
}
