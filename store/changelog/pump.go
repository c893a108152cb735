package changelog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/converge-go/converge/store"
)

// pump writes the changes w delivers until it or ctx ends, syncing them
// in groups: at most SyncEvery after a change is written, at once once
// SyncBytes wait, and when the watch ends.
func (sh *Shipper[T]) pump(ctx context.Context, w store.Watcher[T]) (err error) {
	defer w.Stop()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	armed := false
	defer func() { err = errors.Join(err, sh.sync()) }()
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
			if err := sh.ship(ev); err != nil {
				return err
			}
			switch {
			case sh.w.unsynced >= sh.opts.SyncBytes:
				if err := sh.sync(); err != nil {
					return err
				}
			case sh.w.unsynced > 0 && !armed:
				armed = true
				timer.Reset(max(0, sh.opts.SyncEvery-time.Since(sh.w.lastSync)))
			}
		case <-timer.C:
			armed = false
			if err := sh.sync(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ship writes the record of ev, unless it is in the log already.
func (sh *Shipper[T]) ship(ev store.Event[T]) error {
	r := Record{Key: ev.Object.Key, Revision: ev.Object.Revision, Time: time.Now().UTC()}
	switch ev.Type {
	case store.Created, store.Updated:
		b, err := sh.codec.Marshal(ev.Object.Value)
		if err != nil {
			return fmt.Errorf("changelog: encode the value of %q: %w", r.Key, err)
		}
		r.Op, r.Value, r.CreateRevision = Put, b, ev.Object.CreateRevision
	case store.Deleted:
		r.Op = Delete
	default:
		return nil
	}
	if sh.w.shipped(r) {
		return nil
	}
	if err := checkRecord(r); err != nil {
		return fmt.Errorf("changelog: the store's watch breaks its contract: %w", err)
	}
	if r.Revision < sh.w.last {
		return fmt.Errorf("changelog: the store's watch breaks its contract: revision %d after %d", r.Revision, sh.w.last)
	}
	before := sh.w.f
	if err := sh.w.append(r, sh.opts.SegmentSize); err != nil {
		return err
	}
	if sh.w.f != before {
		sh.retain(sh.w.identity)
	}
	return nil
}

func (sh *Shipper[T]) sync() error {
	if err := sh.w.sync(); err != nil {
		return err
	}
	sh.synced.Store(sh.w.synced)
	return nil
}

// resume returns the writer that goes on with the log of the store
// identity in Dir, or nil if there is none to go on with (no segment of
// it, or one ending in damage): then a new epoch begins. A torn tail is
// cut: the record it held was never whole on disk, so never synced.
func (sh *Shipper[T]) resume(identity string) (*writer, error) {
	segs, err := listSegments(sh.opts.Dir)
	if err != nil {
		return nil, err
	}
	own := of(segs, identity)
	if len(own) == 0 {
		return nil, nil
	}
	keys := map[string]bool{}
	var last int64
	wk := walkLog(own, func(_ int, r Record) error {
		if r.Revision != last {
			clear(keys)
			last = r.Revision
		}
		keys[r.Key] = true
		return nil
	})
	seg := own[len(own)-1]
	switch {
	case errors.Is(wk.end, ErrTorn):
		sh.log.Warn("change log: its last segment ends in a torn record, which is cut", "err", wk.end)
		if err := cut(seg.path, wk.offset); err != nil {
			return nil, err
		}
		if wk.offset == 0 {
			return sh.resume(identity)
		}
	case wk.end != nil:
		return nil, wk.end
	case len(wk.epochs) == 0 || wk.epochs[len(wk.epochs)-1].damage != nil || wk.at != len(own)-1:
		sh.log.Warn("change log: damaged; a new epoch begins with a snapshot", "err", wk.errs())
		return nil, nil
	}
	ep := wk.epochs[len(wk.epochs)-1]
	if ep.last != last {
		clear(keys) // the last segment holds no record
	}
	f, err := os.OpenFile(seg.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("changelog: %w", err)
	}
	return &writer{dir: sh.opts.Dir, f: f, size: fi.Size(), identity: identity, base: ep.base, last: ep.last, synced: ep.last, keys: keys}, nil
}

// cut truncates the segment at path to size bytes, or removes it if
// size is 0 (its header is not whole).
func cut(path string, size int64) error {
	var err error
	if size == 0 {
		err = os.Remove(path)
	} else {
		err = os.Truncate(path, size)
	}
	if err != nil {
		return fmt.Errorf("changelog: cut the torn tail: %w", err)
	}
	return nil
}
