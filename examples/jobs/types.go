package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/converge-go/converge/reconcile/kit/resource"
)

// KeyPrefix is where jobs live in the store: job NAME is the key
// "jobs/NAME".
const KeyPrefix = "jobs/"

// Finalizer is the finalizer the daemon puts on every job before its first
// attempt: deleting the job then only marks it until the daemon has
// stopped its attempt (see Reconciler).
const Finalizer = "jobs.example/attempt"

// Spec is what a user asks for: a command to run to success.
type Spec struct {
	// Command is the program to run (looked up in the daemon's PATH), and
	// Args its arguments. No shell is involved.
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	// Retries is how many failed attempts are retried: a job runs at most
	// 1+Retries times.
	Retries int `json:"retries"`
	// Timeout bounds each attempt (0: none). An attempt still running after
	// it is stopped (SIGTERM to its process group, SIGKILL after a grace
	// period) and counts as failed.
	Timeout Duration `json:"timeout,omitzero"`
}

// Phase is where a job is in its life. See the package documentation for
// the transitions.
type Phase string

// The phases of a job.
const (
	// Pending: no attempt recorded yet. The daemon never writes it: a job
	// without a phase (just added) is pending.
	Pending Phase = "Pending"
	// Starting: the intent of attempt Status.Attempts is recorded under
	// Status.RunID; its process may or may not exist yet.
	Starting Phase = "Starting"
	// Running: the attempt's process is recorded (PID and StartTicks).
	Running Phase = "Running"
	// Backoff: the last attempt failed; the next one starts at
	// Status.NextAttemptAt.
	Backoff Phase = "Backoff"
	// Succeeded: an attempt exited 0. Final.
	Succeeded Phase = "Succeeded"
	// Failed: 1+Retries attempts failed. Final.
	Failed Phase = "Failed"
)

// Final reports whether no attempt follows this phase.
func (p Phase) Final() bool { return p == Succeeded || p == Failed }

// Status is what the daemon last recorded about a job.
type Status struct {
	Phase Phase `json:"phase,omitempty"`
	// Attempts counts the attempts started (or recorded as about to start)
	// for RunGeneration.
	Attempts int `json:"attempts,omitempty"`
	// RunGeneration is the spec generation the attempts run. A final job
	// whose Generation has moved past it is run again from attempt 1.
	RunGeneration int64 `json:"runGeneration,omitempty"`
	// RunID names the current (or last) attempt: its files in the daemon's
	// runs directory and the environment of its process. It is recorded
	// before the process is started (intent before action).
	RunID string `json:"runID,omitempty"`
	// PID and StartTicks identify the attempt's process (its process group
	// leader): StartTicks is its start time in clock ticks since boot, so
	// a reused pid is never mistaken for it.
	PID        int       `json:"pid,omitempty"`
	StartTicks uint64    `json:"startTicks,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	// ExitCode of the last finished attempt (128+N for signal N, -1 when
	// unknown); nil before any finished.
	ExitCode *int `json:"exitCode,omitempty"`
	// Message says what happened last, for people.
	Message string `json:"message,omitempty"`
	// NextAttemptAt is when a job in Backoff starts its next attempt. It is
	// stored, so the delay survives a restart of the daemon.
	NextAttemptAt time.Time `json:"nextAttemptAt,omitzero"`
	FinishedAt    time.Time `json:"finishedAt,omitzero"`
}

// Job is the stored resource.
type Job = resource.Resource[Spec, Status]

// Duration is a time.Duration written in JSON as a string ("1m30s").
type Duration time.Duration

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a string such as "1m30s" (or a number of nanoseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration: want a string such as \"30s\": %w", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
