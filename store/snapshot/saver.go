package snapshot

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/store"
)

// Defaults of SaverOptions.
const (
	// DefaultEvery is how often a Saver looks whether the store moved.
	DefaultEvery = 10 * time.Minute
	// DefaultKeep is how many snapshots a Saver keeps.
	DefaultKeep = 10
)

// SaverOptions configure a Saver. Zero values select the defaults; a
// negative value is refused with store.ErrInvalid.
type SaverOptions struct {
	// Dir is the directory of the snapshots, created (mode 0700) by Run if
	// missing. Required.
	Dir string
	// Every is how often the Saver looks whether the store moved, and
	// saves a snapshot if it did (0: DefaultEvery). It bounds the writes a
	// lost store takes with it: those after the last snapshot.
	Every time.Duration
	// Keep is how many good snapshots Retain keeps after each save (0:
	// DefaultKeep).
	Keep int
	// Logger receives a line per snapshot saved and per failure (nil:
	// discard).
	Logger *slog.Logger
}

// Saver saves a snapshot of a store into a directory at once and then
// every interval, only when the store's revision moved since the newest
// snapshot of its identity there (a store of another identity, or a new
// identity of the same store after a restore, saves at once), and keeps
// the newest few of its identity by revision (Retain). It never removes
// the snapshot it just saved, nor snapshots of other identities (a
// directory shared by several stores), nor those of its identity at
// revisions above the store's, which another history of it left (its file
// put back from a copy): those it names in a warning, for a person to
// judge. An etcd store's revision is its cluster's: writes under other
// prefixes move it too. A Saver is a runnable (reconcile/manager.Runnable)
// without depending on one: Run blocks until its context ends.
type Saver struct {
	src   Source
	dir   string
	every time.Duration
	keep  int
	log   *slog.Logger

	running atomic.Bool // a Run is in progress
}

// NewSaver returns a Saver of src with opts, or an error matching
// store.ErrInvalid for a nil src, an empty Dir or a negative value.
func NewSaver(src Source, opts SaverOptions) (*Saver, error) {
	switch {
	case src == nil:
		return nil, fmt.Errorf("snapshot: %w: nil source", store.ErrInvalid)
	case opts.Dir == "":
		return nil, fmt.Errorf("snapshot: %w: no directory", store.ErrInvalid)
	case opts.Every < 0 || opts.Keep < 0:
		return nil, fmt.Errorf("snapshot: %w: every %v, keep %d: want 0 or more", store.ErrInvalid, opts.Every, opts.Keep)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Saver{
		src:   src,
		dir:   opts.Dir,
		every: cmp.Or(opts.Every, DefaultEvery),
		keep:  cmp.Or(opts.Keep, DefaultKeep),
		log:   log,
	}, nil
}

// Name names the Saver in a manager's logs and health.
func (s *Saver) Name() string { return "snapshot" }

// Run saves snapshots until ctx ends, then returns nil. A save that fails
// (the store unreachable, the disk full) is logged and tried again at the
// next interval; only a directory that cannot be created ends Run early,
// with its error. Each snapshot is written by WriteFile, named
// "snapshot-TIME-rREVISION.snap". Run may be called again once it has
// returned; a call while it runs returns ErrAlreadyRunning.
func (s *Saver) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: saver of %s", ErrAlreadyRunning, s.dir)
	}
	defer s.running.Store(false)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	var last mark
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		last = s.saveIfMoved(ctx, last)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// mark is the revision and identity of the newest snapshot of the store
// in the directory.
type mark struct {
	rev      int64
	identity string
	ok       bool
}

// saveIfMoved saves a snapshot unless the store is where last says, and
// returns the newest snapshot's mark.
func (s *Saver) saveIfMoved(ctx context.Context, last mark) mark {
	rev, id, err := s.src.revision(ctx)
	switch {
	case ctx.Err() != nil:
		return last
	case err != nil:
		s.log.Warn("snapshot not saved: the store's revision cannot be read", "dir", s.dir, "err", err)
		return last
	case !last.ok || id != last.identity:
		last = mark{identity: id}
		if found, err := Latest(s.dir, id); err == nil {
			last.rev, last.ok = found.Info.Revision, true
		}
	}
	if last.ok && rev == last.rev {
		return last
	}
	c, err := s.src.capture(ctx)
	var info Info
	name := ""
	if err == nil {
		name = FileName(c.rev, time.Now())
		info, err = WriteFile(ctx, filepath.Join(s.dir, name), captured(c))
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("snapshot not saved", "dir", s.dir, "err", err)
		}
		return last
	}
	s.log.Info("snapshot saved", "file", name, "revision", info.Revision, "objects", info.Count)
	s.retain(info)
	return mark{rev: info.Revision, identity: info.Identity, ok: true}
}

// retain removes the older snapshots of the store just saved in info,
// never one above it.
func (s *Saver) retain(info Info) {
	removed, above, err := retain(s.dir, info.Identity, s.keep, info.Revision)
	if err != nil {
		s.log.Warn("old snapshots not removed", "dir", s.dir, "err", err)
	} else if len(removed) > 0 {
		s.log.Info("old snapshots removed", "dir", s.dir, "removed", len(removed))
	}
	if above > 0 {
		s.log.Warn("the directory holds snapshots of this store at revisions above its own, from another history of it (its file put back from a copy?); they are kept, and a recovery from the directory would choose them",
			"dir", s.dir, "identity", info.Identity, "revision", info.Revision, "snapshots above", above)
	}
}
