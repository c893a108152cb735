package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// This file holds how the daemon takes what the store gives back: anyone
// holding a token may write any job's spec and status, so what becomes a
// file name, a process to signal, an argument or a line on a terminal is
// checked where it is used. A run ID is recomputed, never read from
// status; a pid from status is signalled only if it is the run's shim
// (locate); a spec no attempt can run is refused, terminally (Failed,
// "invalid spec: ..."); what is printed is made printable.

// maxRetries bounds Spec.Retries: 1+Retries attempts must be countable.
const maxRetries = 1 << 20

// checkSpec refuses a spec no attempt can run.
func checkSpec(s Spec) error {
	switch {
	case s.Command == "":
		return errors.New("empty command")
	case s.Retries < 0 || s.Retries > maxRetries:
		return fmt.Errorf("retries %d: want 0 to %d", s.Retries, maxRetries)
	case s.Timeout < 0:
		return fmt.Errorf("timeout %v < 0", time.Duration(s.Timeout))
	case strings.ContainsRune(s.Command, 0):
		return errors.New("a NUL byte in the command")
	}
	for i, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("a NUL byte in argument %d", i+1)
		}
	}
	return nil
}

// refuse records that obj's spec is one no attempt can run (err says
// why): Failed for its generation, "invalid spec: ...". It is terminal: the
// job is not run, nor retried, until its spec changes.
func refuse(ctx context.Context, s store.Store[*Job], obj store.Object[*Job], err error) (reconcile.Result, error) {
	st := Status{Phase: Failed, RunGeneration: obj.Value.Generation, Message: "invalid spec: " + err.Error()}
	_, err = resource.WriteStatus(ctx, s, obj, st)
	return reconcile.Result{}, err
}

// runID names attempt number attempt of generation gen of the job at key
// made at createRevision: unique per key incarnation, generation and
// attempt, and a plain file name (A-Z a-z 0-9 - _ ., never "." or "..").
func runID(key string, createRevision, gen int64, attempt int) string {
	name := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			return c
		}
		return '_'
	}, strings.TrimPrefix(key, KeyPrefix))
	if len(name) > 64 {
		name = name[:64]
	}
	return fmt.Sprintf("%s-c%d-g%d-a%d", name, createRevision, gen, attempt)
}

// withOwnRun returns obj with the run ID of its recorded attempt (Starting
// or Running) recomputed from what names it, the key, the incarnation, the
// generation and the attempt's number, whatever its status says: the ID
// names the attempt's files and finds its process. obj's value, shared
// with the cache, is changed in a copy.
func withOwnRun(obj store.Object[*Job]) store.Object[*Job] {
	job := obj.Value
	if job == nil || (job.Status.Phase != Starting && job.Status.Phase != Running) {
		return obj
	}
	st := job.Status
	if own := runID(obj.Key, obj.CreateRevision, st.RunGeneration, st.Attempts); own != st.RunID {
		v := *job
		v.Status.RunID = own
		obj.Value = &v
	}
	return obj
}

// printable returns s as it may go to a terminal: s itself if every rune
// is graphic or a space, else quoted with Go's escapes, so that no
// control sequence from the store reaches the terminal.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsGraphic(r) && r != ' ' {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}
