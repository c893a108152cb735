package changelog

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/internal/privatefile"
	"github.com/converge-go/converge/internal/running"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
)

// ErrAlreadyRunning: Shipper.Run called while another Run of the same
// Shipper is in progress. errors.Is matches it with the ErrAlreadyRunning
// of every converge package.
var ErrAlreadyRunning error = running.New("changelog")

// retryDelay is how long a Shipper waits before it watches again after a
// failure (the store unreachable).
const retryDelay = 250 * time.Millisecond

// Options configure a Shipper. Zero values select the defaults; a
// negative value is refused with store.ErrInvalid.
type Options struct {
	// Dir is the directory of the log's segments, made with mode 0700 if
	// missing; it must be a trusted place (internal/privatefile's rule:
	// group and others may not change it). Required.
	Dir string
	// SnapshotDir is where the snapshot that begins each epoch is saved,
	// and whose oldest snapshot of the store bounds what retention keeps
	// (Dir if empty): the directory a snapshot.Saver of the store saves
	// into, so that the log is kept as long as its snapshots.
	SnapshotDir string
	// SyncEvery is the longest a change waits before it is synced to
	// disk (0: DefaultSyncEvery): it bounds the changes a lost machine
	// takes with it, besides those the shipper had not yet received.
	SyncEvery time.Duration
	// SyncBytes syncs at once when so many bytes wait (0:
	// DefaultSyncBytes).
	SyncBytes int
	// SegmentSize is the size past which the next revision starts a new
	// segment (0: DefaultSegmentSize).
	SegmentSize int64
	// InsecurePermissions uses a Dir group or others may change, as the
	// commands' -insecure-permissions does.
	InsecurePermissions bool
	// Logger receives a line per epoch begun, segment removed and failure
	// (nil: discard).
	Logger *slog.Logger
}

// Shipper ships the changes of a store, received through its watch, to
// a log in a directory (see the package doc). Run blocks until its
// context ends; a Shipper is a runnable (reconcile/manager.Runnable)
// without depending on one.
type Shipper[T any] struct {
	s       store.Store[T]
	codec   store.Codec[T]
	opts    Options
	log     *slog.Logger
	running atomic.Bool
	synced  atomic.Int64
	w       *writer // Run's
}

// NewShipper returns the Shipper of s, whose values it logs as codec's
// bytes (nil: the store's own codec if it has one, as snapshot.Typed
// saves them; else a byte store's values as they are, as snapshot.Bytes
// does; else store.JSON), or an
// error matching store.ErrInvalid for a nil s, an empty Dir or a negative
// value.
func NewShipper[T any](s store.Store[T], codec store.Codec[T], opts Options) (*Shipper[T], error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("changelog: %w: nil store", store.ErrInvalid)
	case opts.Dir == "":
		return nil, fmt.Errorf("changelog: %w: no directory", store.ErrInvalid)
	case opts.SyncEvery < 0 || opts.SyncBytes < 0 || opts.SegmentSize < 0:
		return nil, fmt.Errorf("changelog: %w: sync every %v, sync bytes %d, segment size %d: want 0 or more", store.ErrInvalid, opts.SyncEvery, opts.SyncBytes, opts.SegmentSize)
	}
	if enc, ok := s.(store.Encoded[T]); ok && codec == nil && enc.Codec() != nil {
		codec = enc.Codec()
	}
	if _, bytes := any(s).(store.Store[[]byte]); bytes && codec == nil {
		codec = any(raw{}).(store.Codec[T])
	}
	if codec == nil {
		codec = store.JSON[T]{}
	}
	opts.SnapshotDir = cmp.Or(opts.SnapshotDir, opts.Dir)
	opts.SyncEvery = cmp.Or(opts.SyncEvery, DefaultSyncEvery)
	opts.SyncBytes = cmp.Or(opts.SyncBytes, DefaultSyncBytes)
	opts.SegmentSize = cmp.Or(opts.SegmentSize, DefaultSegmentSize)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Shipper[T]{s: s, codec: codec, opts: opts, log: log}, nil
}

// Name names the Shipper in a manager's logs and health.
func (sh *Shipper[T]) Name() string { return "changelog" }

// Synced returns the last revision of the store whose changes are synced
// to the log (0 before the first epoch began).
func (sh *Shipper[T]) Synced() int64 { return sh.synced.Load() }

// Run ships changes until ctx ends, then syncs what it wrote and returns
// nil. A failure (the store unreachable, the disk full) is logged and
// the watch resumed after a short delay; only a directory that cannot be
// made or is not a trusted place ends Run early, with its error. Run may
// be called again once it has returned; a call while it runs returns
// ErrAlreadyRunning.
func (sh *Shipper[T]) Run(ctx context.Context) error {
	if !sh.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: shipper of %s", ErrAlreadyRunning, sh.opts.Dir)
	}
	defer sh.running.Store(false)
	if err := sh.prepare(); err != nil {
		return err
	}
	defer sh.closeWriter()
	for {
		err := sh.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		sh.log.Warn("change log: shipping interrupted; watching again", "dir", sh.opts.Dir, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retryDelay):
		}
	}
}

// prepare makes the directories, and checks the log's.
func (sh *Shipper[T]) prepare() error {
	err := privatefile.Dir(sh.opts.Dir)
	if errors.Is(err, privatefile.ErrUnsafe) && sh.opts.InsecurePermissions {
		sh.log.Warn("change log in an unsafe place, as InsecurePermissions allows", "err", err)
		err = nil
	}
	if err != nil {
		return fmt.Errorf("changelog: %w", err)
	}
	if err := privatefile.Dir(sh.opts.SnapshotDir); err != nil && !errors.Is(err, privatefile.ErrUnsafe) {
		return fmt.Errorf("changelog: %w", err)
	}
	return nil
}

func (sh *Shipper[T]) closeWriter() {
	if sh.w == nil {
		return
	}
	if err := sh.w.close(); err != nil {
		sh.log.Warn("change log: close", "err", err)
	} else {
		sh.synced.Store(sh.w.synced)
	}
	sh.w = nil
}

// session ships from one watch, resuming the log of the store's identity
// or beginning an epoch, until the watch or ctx ends.
func (sh *Shipper[T]) session(ctx context.Context) error {
	id, err := identityOf(ctx, sh.s)
	if err != nil {
		return err
	}
	if sh.w != nil && sh.w.identity != id {
		sh.closeWriter()
	}
	if sh.w == nil {
		if sh.w, err = sh.resume(id); err != nil {
			return err
		}
	}
	for {
		if sh.w == nil {
			if sh.w, err = sh.newEpoch(ctx, id); err != nil {
				return err
			}
		}
		w, err := sh.s.Watch(ctx, "", sh.w.after())
		if err == nil {
			err = sh.pump(ctx, w)
		}
		if !errors.Is(err, store.ErrCompacted) {
			return err
		}
		// A gap: changes after the log's last were not delivered.
		sh.log.Warn("change log: the store no longer holds the changes after the log's last revision; a new epoch begins with a snapshot", "dir", sh.opts.Dir, "revision", sh.w.last)
		sh.closeWriter()
	}
}

// newEpoch saves a snapshot of the store into SnapshotDir and begins an
// epoch after its revision.
func (sh *Shipper[T]) newEpoch(ctx context.Context, id string) (*writer, error) {
	var buf bytes.Buffer
	info, err := snapshot.Save(ctx, &buf, snapshot.Typed(sh.s, sh.codec))
	if err != nil {
		return nil, err
	}
	if info.Identity != id {
		return nil, fmt.Errorf("changelog: %w: the store's identity changed from %q to %q", store.ErrUnavailable, id, info.Identity)
	}
	path := filepath.Join(sh.opts.SnapshotDir, snapshot.FileName(info.Revision, info.Time))
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return nil, fmt.Errorf("changelog: save the snapshot of a new epoch: %w", err)
	}
	w, err := newEpochWriter(sh.opts.Dir, id, info.Revision)
	if err != nil {
		return nil, err
	}
	sh.synced.Store(info.Revision)
	sh.log.Info("change log: epoch begun", "dir", sh.opts.Dir, "snapshot", path, "revision", info.Revision)
	sh.retain(id)
	return w, nil
}

// identityOf returns s's identity, or "" if it has none.
func identityOf(ctx context.Context, s any) (string, error) {
	id, err := store.IdentityOf(ctx, s)
	if err != nil {
		return "", fmt.Errorf("changelog: identity: %w", err)
	}
	return id, nil
}

// raw is the codec of a byte store: the bytes as they are.
type raw struct{}

func (raw) Marshal(v []byte) ([]byte, error)   { return v, nil }
func (raw) Unmarshal(b []byte) ([]byte, error) { return b, nil }
