package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/store"
)

// Found is the snapshot Latest chose, and the files it passed over.
type Found struct {
	// Path is the newest good snapshot's file, and Info what it holds.
	Path string
	Info Info
	// Skipped are the snapshot files Latest read and found no good, with
	// why: every file whose header cannot be read, and every newer one
	// than Path that failed its check, newest first.
	Skipped []Skipped
}

// Skipped is a snapshot file that is no good, and why.
type Skipped struct {
	Path string
	Err  error
}

// Latest returns the newest good snapshot in dir: of the files named
// *.snap (Ext) that do not start with a dot (WriteFile's temporary files
// do), the one whose header has the latest time, by the clock of the
// process that saved it (then the highest revision, then the last name),
// among those whose whole content checks (CheckFile). It reads every
// file's header, and whole files from the newest until one checks.
//
// A damaged file is skipped and named in Found.Skipped. A dir without a
// good snapshot fails with an error matching ErrNoSnapshot, with the
// skipped files in Found; a dir that cannot be read with the file
// system's error (fs.ErrNotExist for a missing one).
func Latest(dir string) (Found, error) {
	good, bad, err := candidates(dir)
	if err != nil {
		return Found{}, err
	}
	found := Found{Skipped: bad}
	for _, c := range good {
		info, err := CheckFile(c.path)
		if err != nil {
			found.Skipped = append(found.Skipped, Skipped{Path: c.path, Err: err})
			continue
		}
		found.Path, found.Info = c.path, info
		return found, nil
	}
	return found, fmt.Errorf("%w in %s (%d damaged)", ErrNoSnapshot, dir, len(found.Skipped))
}

// Retain removes the older snapshots of dir, keeping the newest keep
// (at least 1) good ones, in Latest's order, and returns the paths it
// removed. A snapshot is removed only if keep good ones are newer than
// it, so damage never costs the last good snapshots; a damaged file newer
// than the oldest kept one, or one whose header cannot be read, is left
// for a person to look at (Latest names it). It reads the snapshots it
// keeps whole, as Latest does.
func Retain(dir string, keep int) ([]string, error) {
	if keep < 1 {
		return nil, fmt.Errorf("snapshot: %w: keep %d snapshots, want at least 1", store.ErrInvalid, keep)
	}
	good, _, err := candidates(dir)
	if err != nil {
		return nil, err
	}
	kept := 0
	var removed []string
	var errs []error
	for _, c := range good {
		if kept < keep {
			if _, err := CheckFile(c.path); err == nil {
				kept++
			}
			continue
		}
		if err := os.Remove(c.path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, c.path)
	}
	if len(removed) > 0 {
		errs = append(errs, atomicfile.SyncDir(dir))
	}
	return removed, errors.Join(errs...)
}

// candidate is a snapshot file whose header could be read.
type candidate struct {
	path string
	info Info
}

// candidates returns the snapshot files of dir whose header reads, newest
// first, and those whose header does not.
func candidates(dir string) ([]candidate, []Skipped, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	var good []candidate
	var bad []Skipped
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, Ext) || strings.HasPrefix(name, tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		info, err := readHeader(path)
		if err != nil {
			bad = append(bad, Skipped{Path: path, Err: err})
			continue
		}
		good = append(good, candidate{path: path, info: info})
	}
	slices.SortFunc(good, func(a, b candidate) int {
		return cmp.Or(b.info.Time.Compare(a.info.Time), cmp.Compare(b.info.Revision, a.info.Revision), strings.Compare(b.path, a.path))
	})
	return good, bad, nil
}

// readHeader reads the header of the snapshot file at path.
func readHeader(path string) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	rd, err := NewReader(f)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", path, err)
	}
	return rd.Info(), nil
}
