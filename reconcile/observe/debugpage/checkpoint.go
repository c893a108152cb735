package debugpage

import "github.com/converge-go/converge/store/checkpoint"

// Checkpoint states, as the page and its JSON name them.
const (
	// CheckpointActive: the controller runs from its checkpoint (it could
	// not list its store in time at its start and has not caught up with
	// it since); keys the checkpoint lacks wait for the store.
	CheckpointActive = "active"
	// CheckpointStandby: the controller follows its store and keeps its
	// checkpoint current, for a start without the store.
	CheckpointStandby = "standby"
)

// checkpointView is a controller's checkpoint (reconcile.Health.Checkpoint,
// reconcile.Options.Checkpoint): its state; the revision, seen time and age
// of the checkpoint in use while active, else of the latest written (left
// out before the first); why it was refused at the start, if it was; the
// writes, the failed writes and the latest failure; the damaged checkpoints
// found and ignored.
type checkpointView struct {
	State     string `json:"state"`
	Revision  int64  `json:"revision,omitempty"`
	Seen      string `json:"seen,omitempty"`
	Age       string `json:"age,omitempty"`
	Refused   string `json:"refused,omitempty"`
	Writes    int64  `json:"writes"`
	Failures  int64  `json:"failures"`
	LastError string `json:"lastError,omitempty"`
	Damaged   int64  `json:"damaged"`
}

// checkpointOf describes st; nil for a controller without a checkpoint.
func checkpointOf(st checkpoint.Status) *checkpointView {
	if !st.Enabled {
		return nil
	}
	v := &checkpointView{State: CheckpointStandby, Revision: st.Revision, Seen: timestamp(st.Seen), Refused: st.Refused,
		Writes: st.Writes, Failures: st.Failures, LastError: st.LastError, Damaged: st.Damaged}
	if st.Active {
		v.State = CheckpointActive
	}
	if !st.Seen.IsZero() {
		v.Age = duration(st.Age)
	}
	return v
}
