package robustness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/store"
)

// CheckCompaction compacts s (which must be a Compactor; otherwise the error
// matches errors.ErrUnsupported) halfway through its history and checks the
// contract of watches around the compaction point c: a Watch after any
// revision below c, including 0, fails with store.ErrCompacted, at once or as
// the watch's Err before any event; a Watch after c delivers exactly the
// events after c that the run's watcher received (events, which must cover
// every revision after c up to final). Contract violations match
// ErrCompaction.
//
// ctx bounds the whole check: a watch that neither delivers nor ends is
// reported when ctx ends.
func CheckCompaction(ctx context.Context, s store.Store[Value], events []store.Event[Value], final int64) error {
	c, ok := s.(Compactor)
	if !ok {
		return fmt.Errorf("%w: store %T cannot compact", errors.ErrUnsupported, s)
	}
	if final < 2 {
		return fmt.Errorf("%w: nothing to compact at revision %d", ErrConfig, final)
	}
	at := final / 2
	if err := c.Compact(ctx, at); err != nil {
		return fmt.Errorf("compact to revision %d: %w", at, err)
	}
	for _, after := range []int64{0, at - 1} {
		if err := expectCompacted(ctx, s, after); err != nil {
			return err
		}
	}
	var want []store.Event[Value]
	for _, ev := range events {
		if ev.Object.Revision > at {
			want = append(want, ev)
		}
	}
	return expectEvents(ctx, s, at, want)
}

// expectCompacted checks that a watch after revision after fails with
// store.ErrCompacted. A watch that cannot be opened, or ends, with
// store.ErrUnavailable (a transport that lost the connection) is tried
// again.
func expectCompacted(ctx context.Context, s store.Store[Value], after int64) error {
	for {
		w, err := openWatch(ctx, s, after)
		if err != nil {
			if errors.Is(err, store.ErrCompacted) {
				return nil
			}
			return fmt.Errorf("%w: watch after compacted revision %d failed with %w, want store.ErrCompacted", ErrCompaction, after, err)
		}
		select {
		case ev, ok := <-w.Events():
			w.Stop()
			if ok {
				return fmt.Errorf("%w: watch after compacted revision %d delivered %v %q at revision %d", ErrCompaction, after, ev.Type, ev.Object.Key, ev.Object.Revision)
			}
			switch err := w.Err(); {
			case errors.Is(err, store.ErrCompacted):
				return nil
			case !errors.Is(err, store.ErrUnavailable):
				return fmt.Errorf("%w: watch after compacted revision %d ended with %v, want store.ErrCompacted", ErrCompaction, after, err)
			}
		case <-ctx.Done():
			w.Stop()
			return fmt.Errorf("%w: watch after compacted revision %d neither failed nor delivered: %w", ErrCompaction, after, ctx.Err())
		}
	}
}

// expectEvents checks that a watch after revision after delivers want, in
// order, and nothing else before want's last revision. A watch that cannot
// be opened, or ends, with store.ErrUnavailable is resumed after the last
// event it delivered.
func expectEvents(ctx context.Context, s store.Store[Value], after int64, want []store.Event[Value]) error {
	from := after
	for i := 0; i < len(want); {
		w, err := openWatch(ctx, s, from)
		if err != nil {
			return fmt.Errorf("%w: watch after the compaction point %d (resumed after %d): %w", ErrCompaction, after, from, err)
		}
		i, err = expectFrom(ctx, w, after, want, i)
		w.Stop()
		if err != nil {
			return err
		}
		if i > 0 {
			from = want[i-1].Object.Revision
		}
	}
	return nil
}

// expectFrom reads want[i:] from w and returns how far it got; a watch that
// ends with store.ErrUnavailable returns no error, to be resumed.
func expectFrom(ctx context.Context, w store.Watcher[Value], after int64, want []store.Event[Value], i int) (int, error) {
	for ; i < len(want); i++ {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); errors.Is(err, store.ErrUnavailable) {
					return i, nil
				}
				return i, fmt.Errorf("%w: watch after the compaction point %d ended after %d of %d events: %v", ErrCompaction, after, i, len(want), w.Err())
			}
			if ev != want[i] {
				return i, fmt.Errorf("%w: watch after the compaction point %d delivered %+v as event %d, want %+v", ErrCompaction, after, ev, i, want[i])
			}
		case <-ctx.Done():
			return i, fmt.Errorf("%w: watch after the compaction point %d stalled after %d of %d events: %w", ErrCompaction, after, i, len(want), ctx.Err())
		}
	}
	return i, nil
}

// openWatch watches KeyPrefix on s after revision after, trying again
// while the store is unavailable (until ctx ends).
func openWatch(ctx context.Context, s store.Store[Value], after int64) (store.Watcher[Value], error) {
	for {
		w, err := s.Watch(ctx, KeyPrefix, after)
		if !errors.Is(err, store.ErrUnavailable) {
			return w, err
		}
		if err := ctxtime.Sleep(ctx, time.Millisecond); err != nil {
			return nil, err
		}
	}
}
