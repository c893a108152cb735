package resource

import (
	"fmt"
	"slices"
	"time"

	"github.com/converge-go/converge/store"
)

// ConditionStatus is the state of a Condition: ConditionTrue, ConditionFalse
// or ConditionUnknown.
type ConditionStatus string

// The values of ConditionStatus.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Condition is one aspect of a resource's observed state, such as "Ready"
// or "Degraded", as a controller last saw it. A resource holds at most one
// condition of each Type.
type Condition struct {
	// Type names the aspect; it is required and unique within a resource.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// Reason is a short machine-readable cause, such as "Provisioning".
	Reason string `json:"reason,omitempty"`
	// Message explains the state to a person.
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when Status last changed.
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// validate reports a condition that cannot be stored, with an error matching
// store.ErrInvalid.
func (c Condition) validate() error {
	if c.Type == "" {
		return fmt.Errorf("%w: condition with an empty type", store.ErrInvalid)
	}
	switch c.Status {
	case ConditionTrue, ConditionFalse, ConditionUnknown:
		return nil
	}
	return fmt.Errorf("%w: condition %q has status %q, want True, False or Unknown", store.ErrInvalid, c.Type, c.Status)
}

// SetCondition returns a copy of conds in which c is recorded; conds itself
// is not changed. If conds has a condition of c's Type it is replaced in
// place, otherwise c is appended.
//
// LastTransitionTime is set only when the status changes (or the condition is
// new): to c.LastTransitionTime if that is set, else to now. When the status
// is the same, the existing transition time is kept, so that recording the
// same condition again changes nothing.
func SetCondition(conds []Condition, c Condition, now time.Time) []Condition {
	out := slices.Clone(conds)
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = now
	}
	i := slices.IndexFunc(out, func(e Condition) bool { return e.Type == c.Type })
	if i < 0 {
		return append(out, c)
	}
	if out[i].Status == c.Status {
		c.LastTransitionTime = out[i].LastTransitionTime
	}
	out[i] = c
	return out
}

// FindCondition returns the condition of the given type in conds, and
// whether there is one.
func FindCondition(conds []Condition, conditionType string) (Condition, bool) {
	i := slices.IndexFunc(conds, func(e Condition) bool { return e.Type == conditionType })
	if i < 0 {
		return Condition{}, false
	}
	return conds[i], true
}
