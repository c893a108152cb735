package controller

import (
	"errors"

	"github.com/converge-go/converge/store/apistore"
)

// Admission is the replica set kind's rule where objects are written.
// Register it on the API-server layer for the keys the controller serves
// (apistore.WithAdmission), as the replicaset and failover demos do: a
// spec no reconcile can make work (a negative replica count, a command
// whose program name is empty) is then refused with the field named, and
// nothing is stored. What depends on the host (whether the command's
// program exists here) the reconciler still checks, as a terminal error.
func Admission() apistore.Admission[*ReplicaSet] {
	return apistore.Admission[*ReplicaSet]{Validate: func(rs *ReplicaSet) error {
		if rs == nil {
			return apistore.FieldErrorf("spec", "no replica set")
		}
		return checkSpec(rs.Spec)
	}}
}

// checkSpec refuses what no host can run: the rule of Admission, which
// the reconciler applies too, for a spec stored before the rule.
func checkSpec(spec Spec) error {
	var errs []error
	if spec.Replicas < 0 {
		errs = append(errs, apistore.FieldErrorf("spec.replicas", "%d: must not be negative", spec.Replicas))
	}
	if len(spec.Command) > 0 && spec.Command[0] == "" {
		errs = append(errs, apistore.FieldErrorf("spec.command[0]", "the program's name is empty"))
	}
	return errors.Join(errs...)
}
