package external_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/resource"
)

// driftInterval is the operator's (env.operator).
const driftInterval = 10 * time.Second

// TestEveryHandChangeIsPutBackByTheNextPollWhateverCameBetween: over
// random sequences of spec changes (the operator makes the object anew)
// and hand changes to each part of the object, its removal, its return
// to what it was before the operator's last make (old → made → old
// between two polls), and hand changes that land between the kit's own
// create or update and its look afterwards, the object is put back as
// its spec says, and Ready, within one drift interval of the last change.
func TestEveryHandChangeIsPutBackByTheNextPollWhateverCameBetween(t *testing.T) {
	for seed := range uint64(40) {
		synctest.Test(t, func(t *testing.T) {
			m := newHandModel(t, seed)
			defer m.op.run(t)()
			m.putSpec(vmSpec{Size: 1, Zone: "a"})
			for range 25 {
				m.step()
				if m.rnd.IntN(4) == 0 {
					m.requirePutBack()
				}
			}
			m.requirePutBack()
		})
	}
}

// handModel is an operator running the kit over a fake world in which
// hands change the object, some of them right after the kit's own write.
type handModel struct {
	e    *env
	op   operator
	rnd  *rand.Rand
	seed uint64
	want vmSpec

	mu     sync.Mutex
	log    []string
	armed  func() // a hand change run right after the kit's next create or update
	before vmSpec // the object's spec before the kit's latest write
}

// logf adds a line to the sequence, for a failure's message.
func (m *handModel) logf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

func newHandModel(t *testing.T, seed uint64) *handModel {
	m := &handModel{e: newEnv(t, worldNames), rnd: rand.New(rand.NewPCG(seed, 39)), seed: seed}
	m.e.wrap = m.wrapWorld
	m.op = m.e.operator()
	return m
}

// wrapWorld runs the armed hand change right after a create or update
// succeeds: between the kit's write and its look afterwards.
func (m *handModel) wrapWorld(w external.World[vmSpec, vmStatus]) external.World[vmSpec, vmStatus] {
	create, update := w.Create, w.Update
	w.Create = func(ctx context.Context, d external.Desired[vmSpec]) (string, error) {
		name, err := create(ctx, d)
		if err == nil {
			m.afterWrite(vmSpec{})
		}
		return name, err
	}
	w.Update = func(ctx context.Context, d external.Desired[vmSpec], o external.Observation[vmStatus]) error {
		before, _ := m.object()
		err := update(ctx, d, o)
		if err == nil {
			m.afterWrite(before.Spec)
		}
		return err
	}
	return w
}

func (m *handModel) afterWrite(before vmSpec) {
	m.mu.Lock()
	hand := m.armed
	m.armed, m.before = nil, before
	m.mu.Unlock()
	if hand != nil {
		hand()
	}
}

// step makes one change, then lets a random part of a drift interval go by.
func (m *handModel) step() {
	switch r := m.rnd.IntN(10); {
	case r < 2:
		m.putSpec(vmSpec{Size: m.rnd.IntN(4), Zone: []string{"a", "b"}[m.rnd.IntN(2)]})
	case r < 6:
		m.hand()()
	case r < 7:
		m.mu.Lock()
		before := m.before
		m.mu.Unlock()
		m.edit("back to before the operator's write", &before)
	default:
		hand := m.hand()
		m.mu.Lock()
		m.armed = hand
		m.mu.Unlock()
		m.logf("armed: the next hand change lands right after the kit's write")
		if m.rnd.IntN(2) == 0 {
			m.putSpec(vmSpec{Size: m.rnd.IntN(4), Zone: []string{"a", "b"}[m.rnd.IntN(2)]})
		} else {
			m.edit("removed, for the kit to create it again", nil)
		}
	}
	<-time.After(time.Duration(m.rnd.Int64N(int64(driftInterval))))
	synctest.Wait()
}

// hand returns a random hand change of the object: a part of it, or its
// removal.
func (m *handModel) hand() func() {
	obj, _ := m.object()
	spec := obj.Spec
	switch m.rnd.IntN(3) {
	case 0:
		spec.Size = m.rnd.IntN(4)
	case 1:
		spec.Zone = []string{"a", "b", "c"}[m.rnd.IntN(3)]
	default:
		return func() { m.edit("removed", nil) }
	}
	return func() { m.edit("changed", &spec) }
}

// edit changes the object by hand (removes it if spec is nil).
func (m *handModel) edit(what string, spec *vmSpec) {
	obj, ok := m.object()
	if !ok {
		return
	}
	m.e.fake.Edit(obj.Name, spec)
	m.logf("hand: %s %s %+v", what, obj.Name, spec)
}

func (m *handModel) putSpec(spec vmSpec) {
	_, err := resource.PutSpec(m.e.t.Context(), m.e.s, key, spec)
	require.NoError(m.e.t, err)
	m.want = spec
	m.logf("spec %+v", spec)
	synctest.Wait()
}

// object returns the world's object, if it holds one.
func (m *handModel) object() (obj struct {
	Name string
	Spec vmSpec
}, ok bool) {
	objs := m.e.fake.Objects()
	if len(objs) == 0 {
		return obj, false
	}
	obj.Name, obj.Spec = objs[0].Name, objs[0].Spec
	return obj, true
}

// requirePutBack lets one drift interval go by without a change, then
// checks that the world holds the one object the spec says, Ready.
func (m *handModel) requirePutBack() {
	m.mu.Lock()
	m.armed = nil
	m.mu.Unlock()
	<-time.After(driftInterval + time.Second)
	synctest.Wait()
	m.mu.Lock()
	msg := fmt.Sprintf("seed %d:\n%s", m.seed, strings.Join(m.log, "\n"))
	m.mu.Unlock()
	objs := m.e.fake.Objects()
	require.Len(m.e.t, objs, 1, msg)
	require.Equal(m.e.t, m.want, objs[0].Spec, msg)
	m.e.requireOneObject(m.want.Size, msg)
	m.logf("put back")
}
