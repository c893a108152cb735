package resource

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-go/converge/store"
)

// ConditionReady is the type of the condition that says whether the
// resource serves: True once the world is as its spec says and usable.
const ConditionReady = "Ready"

// Failed returns the condition of type conditionType that says err:
// Status False, Reason reason, and err's text as its Message.
func Failed(conditionType, reason string, err error) Condition {
	c := Condition{Type: conditionType, Status: ConditionFalse, Reason: reason}
	if err != nil {
		c.Message = err.Error()
	}
	return c
}

// WriteError records err in obj's status: the Ready condition False with
// reason and err's text (Failed), merged with conds and written, with
// ObservedGeneration, as WriteStatus writes them (a compare-and-swap
// against obj.Revision; nothing written when nothing changes). Status is
// kept as it is. It returns err, so that a reconcile ends with
//
//	return reconcile.Result{}, resource.WriteError(ctx, req.Store, obj, "Invalid", reconcile.Terminal(err))
//
// and the controller sorts err as it would have (terminal, dependency
// down, backoff). When the status write fails, the error returned says
// so and wraps the write's error, not err: the key is retried (a
// conflict at once, against the newer object), so that err is not left
// unwritten by a terminal error that is never retried. A nil err writes
// nothing and returns nil.
func WriteError[Spec, Status any](ctx context.Context, s store.Store[*Resource[Spec, Status]], obj store.Object[*Resource[Spec, Status]], reason string, err error, conds ...Condition) error {
	if err == nil {
		return nil
	}
	if obj.Value == nil {
		return fmt.Errorf("%w: WriteError: %q: nil resource (the error: %v)", store.ErrInvalid, obj.Key, err)
	}
	conds = append([]Condition{Failed(ConditionReady, reason, err)}, conds...)
	if _, werr := WriteStatus(ctx, s, obj, obj.Value.Status, conds...); werr != nil {
		if errors.Is(werr, store.ErrConflict) {
			return werr
		}
		return fmt.Errorf("resource: %q: status not written: %w (the error it records: %v)", obj.Key, werr, err)
	}
	return err
}
