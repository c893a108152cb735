package externaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/google/go-cmp/cmp"

	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/external"
)

// Object is an object of a Fake world.
type Object[Spec any] struct {
	// Name is the name the world gave it ("obj-1", "obj-2", ...).
	Name string
	Spec Spec
	// Mark is the text stored beside it (external.Mark.String), "" for
	// none.
	Mark string
}

// Fake is a fake external system without idempotency keys: every create
// makes a new object under a new name, as a cloud API's POST does. A
// Fake is safe for concurrent use; its zero value is not: use NewFake.
type Fake[Spec any] struct {
	mu    sync.Mutex
	objs  map[string]Object[Spec]
	made  int
	down  error
	calls map[string]int
}

// NewFake returns an empty Fake.
func NewFake[Spec any]() *Fake[Spec] {
	return &Fake[Spec]{objs: map[string]Object[Spec]{}, calls: map[string]int{}}
}

// Objects returns the world's objects, by name.
func (f *Fake[Spec]) Objects() []Object[Spec] {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.SortedFunc(maps.Values(f.objs), func(a, b Object[Spec]) int {
		return cmpNames(a.Name, b.Name)
	})
}

// cmpNames orders "obj-2" before "obj-10".
func cmpNames(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Made returns how many objects creates have made, gone ones included.
func (f *Fake[Spec]) Made() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.made
}

// Calls returns how many calls of op ("create", "list", ...) the world
// answered.
func (f *Fake[Spec]) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// SetDown makes every call fail with err until SetDown(nil): an outage.
func (f *Fake[Spec]) SetDown(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = err
}

// Edit changes the spec of the object named name by hand (drift), or
// removes it if spec is nil; it reports whether the object exists.
func (f *Fake[Spec]) Edit(name string, spec *Spec) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, ok := f.objs[name]
	switch {
	case !ok:
	case spec == nil:
		delete(f.objs, name)
	default:
		obj.Spec = *spec
		f.objs[name] = obj
	}
	return ok
}

// Put puts obj in the world as it is, under its name: an object made by
// someone else, or by an earlier run.
func (f *Fake[Spec]) Put(obj Object[Spec]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[obj.Name] = obj
}

// call counts a call of op and fails it while the world is down.
func (f *Fake[Spec]) call(op string) error {
	f.calls[op]++
	return f.down
}

// FakeOptions configure Client.
type FakeOptions[Spec, Status any] struct {
	// NoList leaves the World without List: no lookup, no drift polls,
	// no prune.
	NoList bool
	// Status makes the observed status of an object (default: the zero
	// Status).
	Status func(Object[Spec]) Status
	// Reject, if set, refuses specs it returns an error for, at create
	// and update (wrapped with external.Reject).
	Reject func(Spec) error
	// MarkApart makes Create store the mark in a step of its own, after
	// the object ("create mark", through Faults if set), as CREATE
	// DATABASE and COMMENT ON DATABASE do: a crash between them leaves
	// the object unmarked.
	MarkApart bool
	Faults    *Faults
}

// Client returns the external.World of f: Create makes a new object at
// every call, named by the world unless the Desired names it (then a
// name taken is an error); Observe compares specs (go-cmp) and reads the
// mark back, as List does; Update stores a Desired's mark if it has one;
// Delete of a gone object is done; Unmark clears a mark.
func Client[Spec, Status any](f *Fake[Spec], opts FakeOptions[Spec, Status]) external.World[Spec, Status] {
	c := &fakeClient[Spec, Status]{f: f, opts: opts}
	w := external.World[Spec, Status]{Observe: c.observe, Create: c.create, Update: c.update, Delete: c.delete, Unmark: c.unmark}
	if !opts.NoList {
		w.List = func(context.Context) ([]external.Listed, error) { return f.list() }
	}
	return w
}

// fakeClient is the World of a Fake.
type fakeClient[Spec, Status any] struct {
	f    *Fake[Spec]
	opts FakeOptions[Spec, Status]
}

func (c *fakeClient[Spec, Status]) observe(_ context.Context, x external.Desired[Spec]) (external.Observation[Status], error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("observe"); err != nil {
		return external.Observation[Status]{}, err
	}
	obj, ok := f.objs[x.Name]
	if !ok {
		return external.Observation[Status]{State: external.Absent}, nil
	}
	o := external.Observation[Status]{State: external.UpToDate, Fingerprint: fingerprint(obj.Spec)}
	o.Mark, _ = external.ParseMark(obj.Mark)
	if !cmp.Equal(obj.Spec, x.Spec) {
		o.State = external.Differs
	}
	if c.opts.Status != nil {
		o.Status = c.opts.Status(obj)
	}
	return o, nil
}

func (c *fakeClient[Spec, Status]) create(_ context.Context, x external.Desired[Spec]) (string, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create"); err != nil {
		return "", err
	}
	if err := rejected(c.opts.Reject, x.Spec); err != nil {
		return "", err
	}
	name := x.Name
	if _, taken := f.objs[name]; name != "" && taken {
		return "", fmt.Errorf("externaltest: create: %q exists", name)
	}
	f.made++
	if name == "" {
		name = "obj-" + strconv.Itoa(f.made)
	}
	f.objs[name] = Object[Spec]{Name: name, Spec: x.Spec, Mark: x.Mark.String()}
	if !c.opts.MarkApart {
		return name, nil
	}
	f.objs[name] = Object[Spec]{Name: name, Spec: x.Spec}
	f.mu.Unlock()
	defer f.mu.Lock()
	mark := func() error { c.setMark(name, x.Mark.String()); return nil }
	if c.opts.Faults != nil {
		return name, c.opts.Faults.Do("create mark", mark)
	}
	return name, mark()
}

// setMark stores mark beside the object named name, if it exists.
func (c *fakeClient[Spec, Status]) setMark(name, mark string) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if obj, ok := c.f.objs[name]; ok {
		obj.Mark = mark
		c.f.objs[name] = obj
	}
}

func (c *fakeClient[Spec, Status]) update(_ context.Context, x external.Desired[Spec], _ external.Observation[Status]) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update"); err != nil {
		return err
	}
	if err := rejected(c.opts.Reject, x.Spec); err != nil {
		return err
	}
	obj, ok := f.objs[x.Name]
	if !ok {
		return fmt.Errorf("externaltest: update: no object %q", x.Name)
	}
	obj.Spec = x.Spec
	if !x.Mark.IsZero() {
		obj.Mark = x.Mark.String() // adopted
	}
	f.objs[x.Name] = obj
	return nil
}

func (c *fakeClient[Spec, Status]) delete(_ context.Context, x external.Desired[Spec]) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("delete"); err != nil {
		return err
	}
	delete(f.objs, x.Name)
	return nil
}

func (c *fakeClient[Spec, Status]) unmark(_ context.Context, x external.Desired[Spec]) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("unmark"); err != nil {
		return err
	}
	if obj, ok := f.objs[x.Name]; ok {
		obj.Mark = ""
		f.objs[x.Name] = obj
	}
	return nil
}

func (f *Fake[Spec]) list() ([]external.Listed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("list"); err != nil {
		return nil, err
	}
	out := make([]external.Listed, 0, len(f.objs))
	for _, obj := range f.objs {
		m, _ := external.ParseMark(obj.Mark)
		out = append(out, external.Listed{Name: obj.Name, Mark: m, Fingerprint: fingerprint(obj.Spec)})
	}
	slices.SortFunc(out, func(a, b external.Listed) int { return cmpNames(a.Name, b.Name) })
	return out, nil
}

func rejected[Spec any](reject func(Spec) error, spec Spec) error {
	if reject == nil {
		return nil
	}
	return external.Reject(reject(spec))
}

// fingerprint is the fingerprint of a spec: its JSON's.
func fingerprint[Spec any](spec Spec) string {
	b, err := json.Marshal(spec)
	if err != nil {
		return drift.Fingerprint(fmt.Sprintf("%#v", spec))
	}
	return drift.Fingerprint(string(b))
}
