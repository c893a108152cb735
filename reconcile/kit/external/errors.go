package external

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// Class is how an error of the World is handled.
type Class int

const (
	// Transient: retried with the key's backoff (the default).
	Transient Class = iota
	// Rejected: this object is wrong as it is (the world refused its
	// spec): terminal, written into status, retried when it changes.
	Rejected
	// Down: the external system does not serve: blamed on
	// Options.Dependency, whose circuit holds every key until it is back.
	Down
)

// ErrRejected matches the errors of Reject.
var ErrRejected = errors.New("external: rejected")

// Reject marks err, returned by the World, as the world refusing this
// object as it is (Class Rejected).
func Reject(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrRejected, err)
}

// ErrNothingMade matches the errors of NothingMade.
var ErrNothingMade = errors.New("external: nothing made")

// NothingMade marks err, returned by Create, as the world's word that the
// create made nothing (a refusal: the name is taken, a role it needs is
// missing), though it may succeed later: the kit forgets the create, so
// that nothing found under its name afterwards is adopted for it, and
// retries with the key's backoff (unless err is Rejected too).
func NothingMade(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrNothingMade, err)
}

// ErrCreateUnknown matches the error of a resource whose create was cut
// short where the world offers no lookup (no World.List nor
// Options.ExternalName): whether the object exists is for a person to
// find out (the condition Synced False, reason CreateUnknown, says how).
var ErrCreateUnknown = errors.New("external: the result of a create is unknown")

// Condition types and reasons the kit writes.
const (
	ConditionReady  = resource.ConditionReady
	ConditionSynced = "Synced"

	ReasonAvailable      = "Available"      // Ready: the object is as desired and usable
	ReasonCreating       = "Creating"       // Ready: a create is recorded or made, not yet observed
	ReasonUpdating       = "Updating"       // Ready: an update made, not yet observed
	ReasonDeleting       = "Deleting"       // Ready: the resource is being deleted
	ReasonSynced         = "Synced"         // Synced: the last reconcile succeeded
	ReasonError          = "Error"          // Synced: a transient error, retried with backoff
	ReasonRejected       = "Rejected"       // Synced: the world refused the object (terminal)
	ReasonDependencyDown = "DependencyDown" // Synced: the external system does not serve
	ReasonCreateUnknown  = "CreateUnknown"  // Synced: a person must say whether a create happened
	ReasonNotAdopted     = "NotAdopted"     // Synced: the object found is not the one this operator created
)

// worldError is an error the World returned, for fail to tell it from the
// store's.
type worldError struct {
	op  string
	err error
}

func (e *worldError) Error() string { return e.op + ": " + e.err.Error() }
func (e *worldError) Unwrap() error { return e.err }

func fromWorld(op string, err error) error {
	if err == nil {
		return nil
	}
	return &worldError{op: op, err: err}
}

// classify sorts a World's error.
func (r *Reconciler[Spec, Status]) classify(err error) Class {
	switch {
	case errors.Is(err, ErrRejected), errors.Is(err, reconcile.ErrTerminal):
		return Rejected
	case errors.Is(err, dependency.ErrDown):
		return Down
	case r.opts.Classify != nil:
		return r.opts.Classify(err)
	}
	return Transient
}

// fail ends a reconcile of obj with err: a store's error is returned as
// it is (the key is retried; a conflict at once); a World's error, sorted
// by classify, ErrCreateUnknown or ErrNotAdopted, is written into status (Synced and
// Ready False, with ready as Ready's reason if set, but Rejected for a
// refusal) and returned as the
// controller must see it: terminal, blamed on the dependency, or as is.
func (r *Reconciler[Spec, Status]) fail(ctx context.Context, s store.Store[*res[Spec, Status]], obj store.Object[*res[Spec, Status]], err error, ready string) error {
	var we *worldError
	var reason string
	switch {
	case errors.Is(err, ErrCreateUnknown):
		reason, err = ReasonCreateUnknown, reconcile.Terminal(err)
	case errors.Is(err, ErrNotAdopted):
		reason, err = ReasonNotAdopted, reconcile.Terminal(err)
	case !errors.As(err, &we):
		return err
	default:
		switch r.classify(err) {
		case Rejected:
			reason, err = ReasonRejected, reconcile.Terminal(err)
		case Down:
			reason, err = ReasonDependencyDown, r.down(err)
		default:
			reason = ReasonError
		}
	}
	if ready == "" || reason == ReasonRejected {
		ready = reason // a refused create or update is making nothing
	}
	synced := resource.Failed(ConditionSynced, reason, err)
	return resource.WriteError(ctx, s, obj, ready, err, synced)
}

// down makes err one the controller blames on the dependency.
func (r *Reconciler[Spec, Status]) down(err error) error {
	if errors.Is(err, dependency.ErrDown) {
		return err
	}
	name := r.opts.Name
	if r.opts.Dependency != nil {
		name = r.opts.Dependency.Name
	}
	return dependency.Down(name, err)
}
