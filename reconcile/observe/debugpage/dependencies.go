package debugpage

import (
	"time"

	"github.com/converge-go/converge/reconcile/dependency"
)

// Dependency states, as the page and its JSON name them.
const (
	DependencyUp   = "up"
	DependencyDown = "down"
)

// dependencyView is one dependency (reconcile.Health.Dependencies, or
// Options.Dependencies for the process): up or down, since when and for
// how long, the failures since its latest successful check, the latest
// error and check.
type dependencyView struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Since     string `json:"since,omitempty"`
	For       string `json:"for,omitempty"`
	Failures  int    `json:"failures,omitempty"`
	LastError string `json:"lastError,omitempty"`
	LastCheck string `json:"lastCheck,omitempty"`
}

// dependenciesOf describes states at now; nil for none.
func dependenciesOf(states []dependency.State, now time.Time) []dependencyView {
	if len(states) == 0 {
		return nil
	}
	out := make([]dependencyView, len(states))
	for i, st := range states {
		v := dependencyView{Name: st.Name, State: DependencyUp, Since: timestamp(st.Since),
			Failures: st.Failures, LastError: st.LastError, LastCheck: timestamp(st.Checked)}
		if st.Down {
			v.State = DependencyDown
		}
		if !st.Since.IsZero() {
			v.For = duration(now.Sub(st.Since))
		}
		out[i] = v
	}
	return out
}
