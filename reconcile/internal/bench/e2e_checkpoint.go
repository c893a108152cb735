package bench

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/checkpoint"
)

// CheckpointCost is what a checkpointed converge run spent on its
// checkpoint. The figures "until settled" are taken once the run has
// settled, before the controller is stopped; stopping writes the
// checkpoint once more.
type CheckpointCost struct {
	// Until is the time from the run's start to when the figures until
	// settled were taken (the rates below are per second of it).
	Until time.Duration
	// Writes counts the checkpoints written until settled
	// (Health().Checkpoint.Writes), FinalWrites all of them, the one at
	// stop included; Failures the writes that failed, at the end.
	Writes, FinalWrites, Failures int64
	// Objects counts the objects put or deleted by the writes until
	// settled; WriteTime is the time spent in those writes (encoding,
	// the bbolt transaction and its sync), on the controller's
	// checkpoint goroutine.
	Objects   int64
	WriteTime time.Duration
	// Written counts the bytes the process handed to write(2) and
	// pwrite(2) until settled (wchar of /proc/self/io: in this run only
	// the checkpoint writes a file), -1 where that is not available.
	Written int64
	// SettledBytes and FileBytes are the checkpoint file's size once
	// settled and after the run.
	SettledBytes, FileBytes int64
	// The list's own write waits for the tick after it (it yields to the
	// reconciles the list woke): Deferred is the time from settled to the
	// end of the first write after it, DeferredObjects, DeferredTime and
	// DeferredWritten that write's objects, time in Store.Write and
	// bytes written (-1 where not available). All zero if no write came
	// within three intervals.
	Deferred, DeferredTime           time.Duration
	DeferredObjects, DeferredWritten int64
}

// RunConvergeCheckpointed is RunConverge with a checkpoint
// (reconcile.Options.Checkpoint) kept by boltstore.OpenCheckpoint(path,
// opts...) in a new file, written every interval (0:
// checkpoint.DefaultInterval). The file is closed, not removed, on return.
func RunConvergeCheckpointed(s E2EStore, keys []string, workers int, path string, interval time.Duration, opts ...boltstore.Option) (E2EResult, CheckpointCost, error) {
	cp, err := boltstore.OpenCheckpoint[*Pair](path, opts...)
	if err != nil {
		return E2EResult{}, CheckpointCost{}, err
	}
	defer cp.Close()
	ts := &timedCheckpoint{Store: cp}
	var cost CheckpointCost
	start, written0 := time.Now(), processWritten()
	var final *reconcile.Controller[*Pair]
	res, err := runConverge(s, keys, workers, false, convergeHooks{
		options: func(o *reconcile.Options[*Pair]) {
			o.Checkpoint = checkpoint.Options[*Pair]{Store: ts, Interval: interval}
		},
		settled: func(c *reconcile.Controller[*Pair]) {
			cost.Until = time.Since(start)
			cost.Writes = c.Health().Checkpoint.Writes
			cost.Objects, cost.WriteTime = ts.objects.Load(), time.Duration(ts.busy.Load())
			cost.Written = sinceWritten(written0)
			cost.SettledBytes = fileSize(path)
			final = c
			waitDeferredWrite(c, ts, &cost, interval)
		},
	})
	if final != nil {
		h := final.Health().Checkpoint
		cost.FinalWrites, cost.Failures = h.Writes, h.Failures
		if err == nil && h.Failures > 0 {
			err = fmt.Errorf("%d checkpoint writes failed: %s", h.Failures, h.LastError)
		}
	}
	cost.FileBytes = fileSize(path)
	return res, cost, err
}

// waitDeferredWrite waits, for at most three intervals, for the first
// checkpoint write after the figures until settled were taken, and
// records its cost.
func waitDeferredWrite(c *reconcile.Controller[*Pair], ts *timedCheckpoint, cost *CheckpointCost, interval time.Duration) {
	if interval == 0 {
		interval = checkpoint.DefaultInterval
	}
	settled, written := time.Now(), processWritten()
	objects, busy := ts.objects.Load(), ts.busy.Load()
	for deadline := settled.Add(3 * interval); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c.Health().Checkpoint.Writes > cost.Writes {
			cost.Deferred = time.Since(settled)
			cost.DeferredObjects = ts.objects.Load() - objects
			cost.DeferredTime = time.Duration(ts.busy.Load() - busy)
			cost.DeferredWritten = sinceWritten(written)
			return
		}
	}
}

// timedCheckpoint counts the objects its Store's writes carry and the time
// they take.
type timedCheckpoint struct {
	checkpoint.Store[*Pair]
	objects atomic.Int64
	busy    atomic.Int64 // ns
}

func (t *timedCheckpoint) Write(b checkpoint.Batch[*Pair]) error {
	start := time.Now()
	err := t.Store.Write(b)
	t.busy.Add(int64(time.Since(start)))
	t.objects.Add(int64(len(b.Put) + len(b.Delete)))
	return err
}

// processWritten returns the bytes the process has handed to write calls
// (wchar of /proc/self/io), or -1 if that is not available.
func processWritten() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("wchar: ")); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// sinceWritten returns the bytes written since processWritten returned
// before, or -1.
func sinceWritten(before int64) int64 {
	now := processWritten()
	if before < 0 || now < 0 {
		return -1
	}
	return now - before
}

// fileSize returns the size of the file at path, or -1.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// PairCodec is a store.Codec of Pair in two varints (Spec, then Status),
// for a checkpoint without store.JSON's encoding and round-trip check:
// at most 20 bytes a value, and every encoding decodes to a value of the
// same encoding.
type PairCodec struct{}

var _ store.Codec[*Pair] = PairCodec{}

func (PairCodec) Marshal(p *Pair) ([]byte, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil Pair", store.ErrInvalid)
	}
	b := binary.AppendVarint(make([]byte, 0, 2*binary.MaxVarintLen64), int64(p.Spec))
	return binary.AppendVarint(b, int64(p.Status)), nil
}

func (PairCodec) Unmarshal(data []byte) (*Pair, error) {
	spec, n := binary.Varint(data)
	if n <= 0 {
		return nil, errPairCodec
	}
	status, m := binary.Varint(data[n:])
	if m <= 0 || n+m != len(data) {
		return nil, errPairCodec
	}
	return &Pair{Spec: int(spec), Status: int(status)}, nil
}

var errPairCodec = errors.New("bench: not a Pair's encoding")
