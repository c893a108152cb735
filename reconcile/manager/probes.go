package manager

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrNotRunning: the manager has not been started, is stopping or has
// stopped; it is then neither ready nor healthy.
var ErrNotRunning = errors.New("manager: not running")

// ReadyChecker is implemented by runnables that need time before they can do
// their work, such as a controller whose cache is filling. Ready returns nil
// once the runnable is ready (its cache synced), else why not. It must be
// quick and safe to call from any goroutine.
type ReadyChecker interface {
	Ready() error
}

// HealthChecker is implemented by runnables that can tell when they are
// broken, such as a controller with a stuck reconcile. Healthy returns nil
// when healthy, else what is wrong. It must be quick and safe to call from
// any goroutine.
type HealthChecker interface {
	Healthy() error
}

// checkFailure is one failed check: the runnable's name and its error.
type checkFailure struct {
	name string
	err  error
}

// Ready returns nil when the manager is running and every runnable that
// implements ReadyChecker is ready (leader-only runnables are not checked
// while another process leads). Otherwise it returns ErrNotRunning,
// or the failed checks joined, each prefixed with its runnable's name.
func (m *Manager) Ready() error {
	return joinFailures(m.check(func(r Runnable) (bool, error) {
		c, ok := r.(ReadyChecker)
		if !ok {
			return false, nil
		}
		return true, c.Ready()
	}))
}

// Healthy returns nil when the manager is running and every runnable that
// implements HealthChecker is healthy. Otherwise it returns
// ErrNotRunning, or the failed checks joined, each prefixed with its
// runnable's name.
func (m *Manager) Healthy() error {
	return joinFailures(m.check(func(r Runnable) (bool, error) {
		c, ok := r.(HealthChecker)
		if !ok {
			return false, nil
		}
		return true, c.Healthy()
	}))
}

// Readyz returns an HTTP handler for readiness probes: 200 and "ok" (and,
// with an elector, a line "leader: true" or "leader: false") when Ready
// would return nil, else 503 and one line per failed check
// ("name: error"), or "manager: not running".
func (m *Manager) Readyz() http.Handler {
	return m.probe(m.Ready, "")
}

// Healthz returns an HTTP handler for liveness probes: 200 and "ok" (and,
// with an elector, the leadership line) when Healthy would return nil,
// else 503 and one line per failed check ("name: error"), or
// "manager: not running".
func (m *Manager) Healthz() http.Handler {
	return m.probe(m.Healthy, "")
}

// Summaries of failed probes answered to requests without a token, which
// are told the status and nothing of what failed.
const (
	summaryUnready   = "unready"
	summaryUnhealthy = "unhealthy"
)

// probe answers check's result. With an empty summary it answers in full:
// "ok" and the leadership line, or every failed check. Otherwise it
// answers "ok" or summary alone, which names no runnable, key or error.
func (m *Manager) probe(check func() error, summary string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		err := check()
		switch {
		case err == nil:
			w.WriteHeader(http.StatusOK)
			fmt.Fprintln(w, "ok")
			if m.elector != nil && summary == "" {
				fmt.Fprintln(w, "leader:", m.elector.IsLeader())
			}
		case summary != "":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, summary)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			for line := range strings.SplitSeq(err.Error(), "\n") {
				fmt.Fprintln(w, line)
			}
		}
	})
}

// check runs probe on every runnable and returns the failures, or one
// failure naming the manager when it is not running. probe reports whether
// the runnable implements the check and, if so, its result.
func (m *Manager) check(probe func(Runnable) (bool, error)) []checkFailure {
	phase, runnables := m.snapshot()
	if phase != phaseRunning {
		return []checkFailure{{name: "manager", err: fmt.Errorf("%w (%s)", ErrNotRunning, phase)}}
	}
	var failed []checkFailure
	following := !m.IsLeader()
	for _, r := range runnables {
		if r.leaderOnly && m.elector != nil && following {
			continue // not running while another process leads: nothing to check
		}
		if ok, err := probeGuarded(r.runnable, probe); ok && err != nil {
			failed = append(failed, checkFailure{name: r.name, err: err})
		}
	}
	return failed
}

// probeGuarded calls probe, turning a panic of the runnable's check into a
// failure.
func probeGuarded(r Runnable, probe func(Runnable) (bool, error)) (ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			ok, err = true, fmt.Errorf("check panicked: %v", p)
		}
	}()
	return probe(r)
}

// joinFailures returns nil for no failures, else one error per failure,
// joined, each reading "name: error" on its own line. Each error keeps its
// cause for errors.Is.
func joinFailures(failed []checkFailure) error {
	errs := make([]error, 0, len(failed))
	for _, f := range failed {
		errs = append(errs, fmt.Errorf("%s: %w", f.name, oneLine(f.err)))
	}
	return errors.Join(errs...)
}

// oneLine keeps err but flattens its message to one line, so that each
// failure takes one line of probe output.
func oneLine(err error) error {
	msg := err.Error()
	if !strings.Contains(msg, "\n") {
		return err
	}
	return flatError{msg: strings.ReplaceAll(msg, "\n", "; "), err: err}
}

type flatError struct {
	msg string
	err error
}

func (e flatError) Error() string { return e.msg }
func (e flatError) Unwrap() error { return e.err }
