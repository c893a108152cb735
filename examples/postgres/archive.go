package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file holds the WAL archive: the directory PostgreSQL's
// archive_command copies each finished WAL segment into, the command
// itself, built from that directory alone (never from stored text), the
// check that keeps the server's settings equal to it and reports a
// failing archive, and the names of WAL segments.

// ArchiveDependencyName names the WAL archive in the operator's health,
// /readyz and the debug page.
const ArchiveDependencyName = "wal-archive"

// errUnsafeArchive matches an archive directory the operator refuses to
// put into a shell command.
var errUnsafeArchive = fmt.Errorf("%w: the WAL archive's directory", ErrInvalidSpec)

// safePath is what the operator accepts as an absolute path put inside a
// shell command or a setting: no quote, space, '%' or other character
// the shell or PostgreSQL's settings read ('~' is read by a shell only at
// a word's start, where the path has its '/').
var safePath = regexp.MustCompile(`^/[A-Za-z0-9._/+~-]*$`)

// checkSafePath returns an error unless path is absolute, clean and
// spelled with safePath's characters only.
func checkSafePath(what, path string) error {
	if !safePath.MatchString(path) || filepath.Clean(path) != path {
		return fmt.Errorf("%w: %s %q must be a clean absolute path of A-Z a-z 0-9 . _ / + ~ -", ErrInvalidSpec, what, path)
	}
	return nil
}

// walArchive is the WAL archive of the server: its directory, on the
// server's host, which the server's user writes and the operator reads.
type walArchive struct {
	dir string
}

// newWALArchive returns the archive at dir, or an error matching
// ErrInvalidSpec if dir cannot be put into a command.
func newWALArchive(dir string) (*walArchive, error) {
	if err := checkSafePath("-wal-archive", dir); err != nil {
		return nil, fmt.Errorf("%w: %w", errUnsafeArchive, err)
	}
	return &walArchive{dir: dir}, nil
}

// command is the archive_command: it copies segment %p to a temporary
// name in the archive, syncs it and renames it into place, so that a
// segment in the archive is whole; a segment already archived is
// accepted only if its copy is identical (after a crash between the copy
// and PostgreSQL's record of it).
func (a *walArchive) command() string {
	d := a.dir
	return fmt.Sprintf(`if [ -f %[1]s/%%f ]; then cmp -s %%p %[1]s/%%f; else cp %%p %[1]s/.%%f.tmp && sync %[1]s/.%%f.tmp && mv %[1]s/.%%f.tmp %[1]s/%%f; fi`, d)
}

// restoreCommand is the restore_command of a cluster restored from the
// archive.
func (a *walArchive) restoreCommand() string {
	return fmt.Sprintf(`cp %s/%%f %%p`, a.dir)
}

// ensure makes the server's archive settings the operator's and reports
// the archive's health: an error if archive_mode is off (set on, it takes
// effect at PostgreSQL's next restart), or if the latest archiving failed
// after the latest success.
func (a *walArchive) ensure(ctx context.Context, conn *pgx.Conn) error {
	var mode, command string
	if err := conn.QueryRow(ctx, "SELECT current_setting('archive_mode'), current_setting('archive_command')").Scan(&mode, &command); err != nil {
		return err
	}
	if command != a.command() {
		// ALTER SYSTEM takes no parameter: the command is a literal,
		// quoted, and made of the operator's own path alone.
		if _, err := conn.Exec(ctx, "ALTER SYSTEM SET archive_command = "+literal(a.command())); err != nil {
			return fmt.Errorf("setting archive_command: %w", err)
		}
		if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			return err
		}
	}
	if mode == "off" {
		if _, err := conn.Exec(ctx, "ALTER SYSTEM SET archive_mode = on"); err != nil {
			return fmt.Errorf("setting archive_mode: %w", err)
		}
		return errors.New("archive_mode is off: set on, it takes effect when PostgreSQL restarts")
	}
	return a.failing(ctx, conn)
}

// failing returns an error if pg_stat_archiver shows a failure after the
// latest success.
func (a *walArchive) failing(ctx context.Context, conn *pgx.Conn) error {
	var failedWAL string
	var failedAt, archivedAt *time.Time
	err := conn.QueryRow(ctx, `SELECT coalesce(last_failed_wal, ''), last_failed_time, last_archived_time FROM pg_stat_archiver`).
		Scan(&failedWAL, &failedAt, &archivedAt)
	if err != nil {
		return err
	}
	if failedAt != nil && (archivedAt == nil || failedAt.After(*archivedAt)) {
		return fmt.Errorf("archiving WAL fails: %s at %s could not be archived to %s", failedWAL, failedAt.UTC().Format(time.RFC3339), a.dir)
	}
	return nil
}

// check is the archive's dependency check, on a connection of p.
func (a *walArchive) check(p *pg) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		c, err := p.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		return a.ensure(ctx, c.Conn())
	}
}

// switchAndWait closes the current WAL segment (pg_switch_wal) and waits
// until it is in the archive, so that everything committed before the
// call can be restored.
func (a *walArchive) switchAndWait(ctx context.Context, conn *pgx.Conn, limit time.Duration) error {
	var seg string
	if err := conn.QueryRow(ctx, "SELECT pg_walfile_name(pg_switch_wal())").Scan(&seg); err != nil {
		return fmt.Errorf("switching WAL: %w", err)
	}
	if err := checkSegment(seg); err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(filepath.Join(a.dir, seg)); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("WAL segment %s not archived within %v: %v", seg, limit, a.failing(ctx, conn))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// segmentName is the spelling of a WAL segment's file name: timeline, log
// and segment, eight hex digits each.
var segmentName = regexp.MustCompile(`^[0-9A-F]{24}$`)

// checkSegment returns an error unless seg is a WAL segment's name.
func checkSegment(seg string) error {
	if !segmentName.MatchString(seg) {
		return fmt.Errorf("%w: %q is not a WAL segment's name", ErrInvalidSpec, seg)
	}
	return nil
}

// segments lists the WAL segments in the archive, in order.
func (a *walArchive) segments() ([]string, error) {
	entries, err := os.ReadDir(a.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if checkSegment(e.Name()) == nil && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil // ReadDir sorts by name: segment order within a timeline
}

// remove removes the segments named from the archive, never a file of
// another name.
func (a *walArchive) remove(segs []string) error {
	var errs []error
	for _, s := range segs {
		if err := checkSegment(s); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := removeIn(a.dir, s); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
