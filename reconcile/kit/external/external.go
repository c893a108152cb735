package external

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/nilness"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// ErrInvalid matches every error New returns for bad options; it matches
// the ErrInvalid of every converge package.
var ErrInvalid error = invalid.New("external")

// State is what Observe found of the external object for a desired one.
type State int

// The states of an external object.
const (
	// Absent: the world has no such object.
	Absent State = iota
	// UpToDate: it exists and is as the spec says.
	UpToDate
	// Differs: it exists and differs from the spec: Update is called.
	Differs
)

func (s State) String() string {
	switch s {
	case Absent:
		return "Absent"
	case UpToDate:
		return "UpToDate"
	case Differs:
		return "Differs"
	}
	return "State(?)"
}

// Observation is what Observe saw of an external object.
type Observation[Status any] struct {
	State State
	// Status is the observed status, written into the resource (the kit
	// sets its Record field, Options.Record, before writing it).
	Status Status
	// Fingerprint is what the object looks like in what the reconciler
	// compares (drift.Fingerprint of its fields), as World.List lists it:
	// a poll that lists another wakes the key (drift).
	Fingerprint string
	// NotReady, if not empty, says why an existing object is not yet
	// usable ("booting"): Ready stays False with it as the reason and the
	// key is looked at again after Options.Poll.
	NotReady string
	// Mark is the mark read back beside the object (ParseMark), the zero
	// Mark for none. Left zero, the kit asks List for it when it must
	// know whose the object is (an object found after a recorded create).
	Mark Mark
}

// Desired is what the kit hands the World for one object.
type Desired[Spec any] struct {
	// Key is the store key, Spec the desired spec.
	Key  string
	Spec Spec
	// Name is the external object's name: Options.ExternalName's, else
	// the one recorded in status (an object it names is checked to carry
	// the operator's mark before it is updated, unmarked or deleted); ""
	// while the world has not named it.
	Name string
	// Mark is what Create must store beside the object (a tag, a
	// comment: Mark.String), for List to read back.
	Mark Mark
}

// Listed is an external object as World.List lists it.
type Listed struct {
	// Name is the world's name for it, as Delete and Observe take it.
	Name string
	// Mark is the mark read back beside it (ParseMark); the zero Mark
	// for an object without one.
	Mark Mark
	// Fingerprint is as Observation.Fingerprint.
	Fingerprint string
}

// World is the domain: how to observe, create, update and delete the
// external object of a desired one, and list the objects this operator
// marked. Observe, Create, Update and Delete are required; each must
// return when ctx ends. See the package documentation for what each error
// means.
type World[Spec, Status any] struct {
	// Observe reports the object named d.Name (never called with an
	// empty name).
	Observe func(ctx context.Context, d Desired[Spec]) (Observation[Status], error)
	// Create makes the object, storing d.Mark beside it, and returns its
	// name (the one the world gave it; "" to keep d.Name). It need not be
	// idempotent.
	Create func(ctx context.Context, d Desired[Spec]) (name string, err error)
	// Update makes the object named d.Name as d.Spec says, and, if d.Mark
	// is not zero, stores d.Mark beside it: an object found unmarked
	// after a create this operator recorded in Options.Creates, adopted.
	Update func(ctx context.Context, d Desired[Spec], o Observation[Status]) error
	// Delete deletes the object named d.Name; one already gone is done.
	// d.Mark is not zero for an unmarked object the kit adopted (see
	// Options.Creates); a World that deletes only marked objects takes
	// that as the mark.
	Delete func(ctx context.Context, d Desired[Spec]) error
	// List lists the world's objects with their marks (unmarked ones
	// too: the kit polls those it manages by name): the lookup after a
	// create whose result is unknown, drift polls and prune. Optional:
	// without it and without Options.ExternalName, a create cut short
	// asks a person (ErrCreateUnknown).
	List func(ctx context.Context) ([]Listed, error)
	// Unmark removes the mark of the object named d.Name. Required with
	// List when a Reclaim policy may Retain: a retained object would
	// otherwise be pruned.
	Unmark func(ctx context.Context, d Desired[Spec]) error
}

// Reclaim is what becomes of the external object when its resource is
// deleted.
type Reclaim int

const (
	// Delete deletes it (the default).
	Delete Reclaim = iota
	// Retain keeps it, unmarked, and forgets it.
	Retain
)

// Options configure a Reconciler. Name and Record are required.
type Options[Spec, Status any] struct {
	// Name is the owner written in marks (Mark.Owner) and names the
	// drift source and the pruner.
	Name string
	// Prefix is the controller's Options.Prefix: drift and prune see only
	// keys under it.
	Prefix string
	// Finalizer is the finalizer the kit puts on each resource (default
	// "external.converge/" + Name; a qualified name, as
	// apistore.ValidateFinalizer says).
	Finalizer string
	// Record points into a status to the kit's Record: where the external
	// name, a create in progress and the last fingerprint are kept.
	Record func(st *Status) *Record
	// ExternalName, if set, names each external object before it is
	// created (a database named after its key): a create cut short is
	// then found by Observe. Unset, the world names objects (Create's
	// result).
	ExternalName func(key string, spec Spec) string
	// Reclaim says what a deletion does to the external object (nil:
	// Delete).
	Reclaim func(spec Spec) Reclaim
	// Creates, if set, is the operator's own record of the creates it
	// starts, for a World whose Create makes the object and its mark in
	// two steps: an object found unmarked after a create recorded in
	// status is adopted only if Creates holds that create (see Creates).
	Creates Creates
	// Dependency is the external system, shared by every controller of it
	// (see package dependency); errors Classify calls Down are blamed on it.
	Dependency *dependency.Dependency
	// Validate, if set, refuses a resource the operator will not act on
	// (its key or spec, or what they name in the world), before anything
	// else of a reconcile: the error is written into status as Rejected
	// and is terminal until the resource changes; one matching
	// dependency.ErrDown is blamed on the dependency instead, and the
	// key retried. It is not called for a resource being deleted,
	// whose cleanup runs whatever its spec. Admission (package apistore)
	// refuses at the door; Validate is for what reaches the store anyway
	// (written below the layer, or before a rule existed).
	Validate func(ctx context.Context, key string, spec Spec) error
	// Classify sorts an error of the World that the kit cannot sort
	// (see Class); nil: every such error is Transient.
	Classify func(err error) Class
	// Poll is how long after a reconcile the key is looked at again while
	// its object is not ready, and always when the World has no List
	// (default 1 minute). Drift.Interval is how often List is polled.
	Poll time.Duration
	// Drift and Prune configure the drift source and the pruner; the kit
	// sets their Name, and Prune's Prefix, World and Delete.
	Drift drift.Options
	Prune prune.Options
	// Logger (default discarded).
	Logger *slog.Logger
}

const defaultPoll = time.Minute

func (o *Options[Spec, Status]) check() error {
	switch {
	case o.Name == "":
		return fmt.Errorf("%w: empty Name", ErrInvalid)
	case o.Record == nil:
		return fmt.Errorf("%w: nil Record", ErrInvalid)
	case o.Poll < 0:
		return fmt.Errorf("%w: Poll %v < 0", ErrInvalid, o.Poll)
	}
	return store.ValidatePrefix(o.Prefix)
}

func (o *Options[Spec, Status]) fillDefaults() {
	if o.Finalizer == "" {
		o.Finalizer = "external.converge/" + o.Name
	}
	if o.Poll == 0 {
		o.Poll = defaultPoll
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Drift.Name, o.Prune.Name, o.Prune.Prefix = o.Name, o.Name, o.Prefix
}

// Reconciler is the reconcile.Reconciler of a kind whose objects stand
// for objects of an external system. Make one with New; its methods are
// safe for concurrent use.
type Reconciler[Spec, Status any] struct {
	s       store.Store[*resource.Resource[Spec, Status]]
	world   World[Spec, Status]
	opts    Options[Spec, Status]
	marker  *prune.Marker
	drift   *drift.Source // nil without World.List
	managed managed       // the objects the drift source lists by name
}

// New returns the Reconciler of the resources of s (the controller's
// store, a store.Identifier) for world. Bad input returns an error
// matching ErrInvalid.
func New[Spec, Status any](s store.Store[*resource.Resource[Spec, Status]], world World[Spec, Status], opts Options[Spec, Status]) (*Reconciler[Spec, Status], error) {
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := world.check(opts.Reclaim != nil); err != nil {
		return nil, err
	}
	id, ok := s.(store.Identifier)
	if nilness.Is(s) || !ok {
		return nil, fmt.Errorf("%w: the store %T has no identity (store.Identifier)", ErrInvalid, s)
	}
	opts.fillDefaults()
	if err := apistore.ValidateFinalizer(opts.Finalizer); err != nil {
		return nil, fmt.Errorf("%w: Finalizer (or Name): %w", ErrInvalid, err)
	}
	marker, err := prune.NewMarker(opts.Name, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r := &Reconciler[Spec, Status]{s: s, world: world, opts: opts, marker: marker}
	if world.List != nil {
		if r.drift, err = drift.New(r.driftList, opts.Drift); err != nil {
			return nil, fmt.Errorf("%w: Drift: %w", ErrInvalid, err)
		}
	}
	return r, nil
}

func (w *World[Spec, Status]) check(mayRetain bool) error {
	switch {
	case w.Observe == nil || w.Create == nil || w.Update == nil || w.Delete == nil:
		return fmt.Errorf("%w: a World needs Observe, Create, Update and Delete", ErrInvalid)
	case mayRetain && w.List != nil && w.Unmark == nil:
		return fmt.Errorf("%w: a Reclaim policy may Retain: a World with List needs Unmark, or retained objects are pruned", ErrInvalid)
	}
	return nil
}

// Sources returns the controller's sources the kit needs: the drift
// source polling World.List (none without it). Give them to
// reconcile.Options.Sources.
func (r *Reconciler[Spec, Status]) Sources() []reconcile.Source {
	if r.drift == nil {
		return nil
	}
	return []reconcile.Source{r.drift}
}

// Dependencies returns Options.Dependency, for
// reconcile.Options.Dependencies (none if unset).
func (r *Reconciler[Spec, Status]) Dependencies() []*dependency.Dependency {
	if r.opts.Dependency == nil {
		return nil
	}
	return []*dependency.Dependency{r.opts.Dependency}
}
