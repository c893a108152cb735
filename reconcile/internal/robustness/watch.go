package robustness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/store"
)

// WatchLog is what a watcher observed during a run: every event received, in
// order of receipt, across all its reconnections.
type WatchLog struct {
	Events []store.Event[Value]
	// Disconnects counts the watches the watcher stopped on purpose to
	// resume them; Resumes counts every resumption, including those after
	// the store ended a watch (store.ErrLagging, or store.ErrUnavailable
	// across a restart).
	Disconnects int
	Resumes     int
}

// maxIdleResumes bounds the resumptions in a row that deliver nothing, so a
// store that ends every watch at once fails the run instead of spinning.
const maxIdleResumes = 3

// watchUntil watches prefix on s after revision start until it has received
// the event of the revision sent on final (or final is start), stopping and resuming
// the watch after every disconnectEvery events (never, if 0). A watch that
// ends with store.ErrLagging or store.ErrUnavailable is resumed after the
// last event received; any other end is an error.
func watchUntil(ctx context.Context, s store.Store[Value], prefix string, start int64, disconnectEvery int, final <-chan int64) (WatchLog, error) {
	var (
		log    WatchLog
		last         = start
		target int64 = -1
		idle   int
	)
	for {
		if target >= 0 && last >= target {
			return log, nil
		}
		w, err := s.Watch(ctx, prefix, last)
		if errors.Is(err, store.ErrUnavailable) {
			// An outage (of the fault store): try again shortly, like a client
			// reconnecting.
			if err := ctxtime.Sleep(ctx, time.Millisecond); err != nil {
				return log, fmt.Errorf("watch after revision %d: %w", last, err)
			}
			continue
		}
		if err != nil {
			return log, fmt.Errorf("watch after revision %d: %w", last, err)
		}
		got, reason, err := drain(ctx, w, &log, &last, &target, disconnectEvery, final)
		w.Stop()
		switch {
		case err != nil:
			return log, err
		case reason == drainDone:
			return log, nil
		case reason == drainDisconnect:
			log.Disconnects++
		}
		if got == 0 {
			idle++
			if idle > maxIdleResumes {
				return log, fmt.Errorf("watch after revision %d ended %d times in a row without an event: %w", last, idle, w.Err())
			}
		} else {
			idle = 0
		}
		log.Resumes++
	}
}

type drainEnd uint8

const (
	drainDone drainEnd = iota
	drainDisconnect
	drainEnded
)

// drain reads w until the target revision is reached (drainDone), it has
// read disconnectEvery events (drainDisconnect) or the store ended the watch
// for a resumable reason (drainEnded).
func drain(ctx context.Context, w store.Watcher[Value], log *WatchLog, last, target *int64, disconnectEvery int, final <-chan int64) (int, drainEnd, error) {
	got := 0
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				err := w.Err()
				if errors.Is(err, store.ErrLagging) || errors.Is(err, store.ErrUnavailable) {
					return got, drainEnded, nil
				}
				return got, drainEnded, fmt.Errorf("watch after revision %d ended: %w", *last, err)
			}
			log.Events = append(log.Events, ev)
			*last = ev.Object.Revision
			got++
			if *target >= 0 && *last >= *target {
				return got, drainDone, nil
			}
			if disconnectEvery > 0 && got >= disconnectEvery {
				return got, drainDisconnect, nil
			}
		case t := <-final:
			*target, final = t, nil
			if *last >= t {
				return got, drainDone, nil
			}
		case <-ctx.Done():
			return got, drainEnded, fmt.Errorf("watch after revision %d: %w", *last, ctx.Err())
		}
	}
}
