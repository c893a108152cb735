package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
)

// The records every process of a run appends to one shared file, opened
// with O_APPEND: each record is one write(2) of one short line, so records
// never interleave and the file's order is the order in which they were
// written. The parent reads the file to narrate, measure and check.
//
// A line is "<unix ns> <who> <kind> <key> <n1> <n2> <note>", "-" standing
// for an empty key or note.
const (
	// Written by a replica.
	kindUp      = "UP" // started: n1 its pid
	kindBegin   = "B"  // reconcile of key begins under the claim of epoch n1
	kindEnd     = "E"  // reconcile of key ended; note: its outcome
	kindWrite   = "W"  // a write of key under epoch n1 was accepted at revision n2
	kindOwned   = "O"  // the replica owns n1 buckets
	kindRelease = "R"  // the replica starts handing bucket n1 over to note
	kindGained  = "G"  // the replica owns bucket n1 (seen by its Status poll)
	kindArmed   = "A"  // late write of key prepared under epoch n1, at object revision n2
	kindLate    = "L"  // late write of key under epoch n1 sent; note: its outcome
	kindRunDone = "DOWN"
	// Written by the parent about replica key.
	kindKill  = "KILL"
	kindStop  = "STOP"
	kindCont  = "CONT"
	kindLeave = "LEAVE" // sent SIGTERM: a planned leave
)

// Outcomes of a reconcile or a late write (record notes).
const (
	outOK       = "ok"
	outGuard    = "guard"    // store.ErrGuardFailed: fenced off
	outConflict = "conflict" // store.ErrConflict
	outCanceled = "canceled" // the claim's context ended first
	outError    = "error"
	outAccepted = "accepted" // a late write the store took: a broken guarantee
)

// record is one line of the shared file.
type record struct {
	At     time.Time
	Who    string
	Kind   string
	Key    string
	N1, N2 int64
	Note   string
}

// String formats r as its line, without the newline.
func (r record) String() string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	return fmt.Sprintf("%d %s %s %s %d %d %s", r.At.UnixNano(), r.Who, r.Kind, dash(r.Key), r.N1, r.N2, dash(r.Note))
}

// parseRecord reads one line written by String.
func parseRecord(line string) (record, error) {
	f := strings.Fields(line)
	if len(f) != 7 {
		return record{}, fmt.Errorf("record %q: want 7 fields, got %d", line, len(f))
	}
	var nums [3]int64
	for i, s := range []string{f[0], f[4], f[5]} {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return record{}, fmt.Errorf("record %q: %w", line, err)
		}
		nums[i] = n
	}
	undash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	return record{At: time.Unix(0, nums[0]), Who: f[1], Kind: f[2], Key: undash(f[3]), N1: nums[1], N2: nums[2], Note: undash(f[6])}, nil
}

// recorder appends one process's records to the shared file.
type recorder struct {
	who string
	f   *os.File
}

// openRecorder opens path for appending records signed who.
func openRecorder(path, who string) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &recorder{who: who, f: f}, nil
}

// put appends one record, stamped now. Records are a few dozen bytes: one
// write each, never split. A failed write is dropped: the checker then
// misses a record, which can only make it report a violation that did not
// happen, never hide one (an end or a write it misses is flagged).
func (r *recorder) put(kind, key string, n1, n2 int64, note string) {
	line := record{At: time.Now(), Who: r.who, Kind: kind, Key: key, N1: n1, N2: n2, Note: note}.String() + "\n"
	_, _ = r.f.WriteString(line)
}

func (r *recorder) close() error { return r.f.Close() }

// recordLog reads the shared file as it grows. It is safe for concurrent
// use.
type recordLog struct {
	mu      sync.Mutex
	f       *os.File
	partial []byte
	recs    []record
	err     error
}

func openRecordLog(path string) (*recordLog, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &recordLog{f: f}, nil
}

// read takes in what was appended since the last call and returns every
// record so far (shared: not to be modified), or the first malformed line.
func (l *recordLog) read() ([]record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.recs, l.err
	}
	buf, err := io.ReadAll(l.f)
	if err != nil {
		l.err = err
		return l.recs, err
	}
	data := append(l.partial, buf...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		r, err := parseRecord(string(data[:i]))
		if err != nil {
			l.err = err
			return l.recs, err
		}
		l.recs = append(l.recs, r)
		data = data[i+1:]
	}
	l.partial = append([]byte(nil), data...)
	return l.recs, nil
}

func (l *recordLog) close() error { return l.f.Close() }

// recorded wraps the replica's reconciler: it records each reconcile's
// beginning, under the epoch of the key's claim, and its end with its
// outcome, and each write of it the store accepted, with the revision.
type recorded struct {
	next   reconcile.Reconciler[*Item]
	rec    *recorder
	claims *claims
}

// Reconcile implements reconcile.Reconciler.
func (r recorded) Reconcile(ctx context.Context, req reconcile.Request[*Item]) (res reconcile.Result, err error) {
	epoch := r.claims.epoch(req.Key)
	r.rec.put(kindBegin, req.Key, epoch, 0, "")
	defer func() { r.rec.put(kindEnd, req.Key, epoch, 0, outcome(ctx, err)) }()
	req.Store = recordedWrites{Store: req.Store, rec: r.rec, epoch: epoch}
	return r.next.Reconcile(ctx, req)
}

// recordedWrites records each Update the store accepted.
type recordedWrites struct {
	store.Store[*Item]
	rec   *recorder
	epoch int64
}

func (s recordedWrites) Update(ctx context.Context, key string, v *Item, rev int64, guards ...store.Guard) (store.Object[*Item], error) {
	obj, err := s.Store.Update(ctx, key, v, rev, guards...)
	if err == nil {
		s.rec.put(kindWrite, key, s.epoch, obj.Revision, "")
	}
	return obj, err
}
