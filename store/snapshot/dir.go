package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/store"
)

// Found is the snapshot Latest chose, and the files it passed over.
type Found struct {
	// Path is the chosen snapshot's file, and Info what it holds.
	Path string
	Info Info
	// Skipped are the snapshot files Latest read and found no good, with
	// why: every file whose header cannot be read, and every snapshot of
	// the identity asked for above Path (by revision) that failed its
	// check.
	Skipped []Skipped
	// Foreign are the snapshot files of other identities, which Latest
	// never chooses, whatever their revision or time: what a directory
	// shared by several stores, or one of another store, holds. Their Info
	// is their header's (no Checksum: they were not checked).
	Foreign []File
	// Above are the snapshot files of the identity above the revision
	// LatestAtMost was given, passed over as another history of the store;
	// their Info is their header's.
	Above []File
}

// Skipped is a snapshot file that is no good, and why.
type Skipped struct {
	Path string
	Err  error
}

// File is a snapshot file and what its header says.
type File struct {
	Path string
	Info Info
}

// Latest returns the snapshot in dir to restore the store whose identity
// is identity ("" for a store without one): of the files named *.snap
// (Ext) that do not start with a dot (WriteFile's temporary files do),
// those whose header names identity, and of those the one with the
// highest revision whose whole content checks (CheckFile). Equal revisions
// of one store are one state of it: the last name wins. The time in a
// header is never compared: a clock set wrong cannot make an older
// snapshot win. Stores without an identity cannot be told apart: give
// each its own directory. Latest reads every file's header, and whole
// files from the highest revision down until one checks.
//
// A damaged file is skipped and named in Found.Skipped; a snapshot of
// another identity is passed over and named in Found.Foreign. A dir
// without a good snapshot of identity fails with an error matching
// ErrNoSnapshot, and also ErrIdentity if it holds snapshots of other
// identities (the error names them: a snapshot of another store is
// restored only when named, by its file); a dir that cannot be read fails
// with the file system's error (fs.ErrNotExist for a missing one).
func Latest(dir, identity string) (Found, error) {
	return LatestAtMost(dir, identity, math.MaxInt64)
}

// LatestAtMost is Latest of the snapshots of identity at or below
// revision rev: the one to restore a store of that identity known to have
// reached rev. A store's revision never goes down, so a snapshot of it
// above rev is of another history of it (its file put back from a copy,
// then written anew), not of the one that reached rev: it is passed over
// and named in Found.Above, and fails it with ErrNoSnapshot if no other
// is left.
func LatestAtMost(dir, identity string, rev int64) (Found, error) {
	all, bad, err := candidates(dir)
	if err != nil {
		return Found{}, err
	}
	own, foreign := byIdentity(all, identity)
	found := Found{Skipped: bad, Foreign: foreign}
	for _, c := range own {
		if c.Info.Revision > rev {
			found.Above = append(found.Above, c)
			continue
		}
		info, err := CheckFile(c.Path)
		if err != nil {
			found.Skipped = append(found.Skipped, Skipped{Path: c.Path, Err: err})
			continue
		}
		found.Path, found.Info = c.Path, info
		return found, nil
	}
	err = fmt.Errorf("%w of identity %q in %s (%d damaged)", ErrNoSnapshot, identity, dir, len(found.Skipped))
	if len(found.Above) > 0 {
		err = fmt.Errorf("%w; %d of it above revision %d, of another history", err, len(found.Above), rev)
	}
	if len(foreign) > 0 {
		err = fmt.Errorf("%w; it holds %d of other identities (%s): %w", err, len(foreign), identities(foreign), ErrIdentity)
	}
	return found, err
}

// Retain removes the older snapshots of the store whose identity is
// identity from dir, keeping the keep (at least 1) with the highest
// revisions that check, and returns the paths it removed. A snapshot is
// removed only if keep good ones of its identity have higher revisions
// (or the same revision and a later name, Latest's order), so damage never
// costs the last good snapshots; a damaged file above the oldest kept one,
// a file whose header cannot be read and every snapshot of another
// identity are left as they are (Latest names them). It reads the
// snapshots it keeps whole, as Latest does.
func Retain(dir, identity string, keep int) ([]string, error) {
	removed, _, err := retain(dir, identity, keep, math.MaxInt64)
	return removed, err
}

// retain is Retain of the snapshots at or below revision ceiling; those
// above it are left as they are, and counted.
func retain(dir, identity string, keep int, ceiling int64) (removed []string, above int, err error) {
	if keep < 1 {
		return nil, 0, fmt.Errorf("snapshot: %w: keep %d snapshots, want at least 1", store.ErrInvalid, keep)
	}
	all, _, err := candidates(dir)
	if err != nil {
		return nil, 0, err
	}
	own, _ := byIdentity(all, identity)
	kept := 0
	var errs []error
	for _, c := range own {
		switch {
		case c.Info.Revision > ceiling:
			above++
			continue
		case kept < keep:
			if _, err := CheckFile(c.Path); err == nil {
				kept++
			}
			continue
		}
		if err := os.Remove(c.Path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, c.Path)
	}
	if len(removed) > 0 {
		errs = append(errs, atomicfile.SyncDir(dir))
	}
	return removed, above, errors.Join(errs...)
}

// candidates returns the snapshot files of dir whose header reads, by
// revision from the highest (then by name, the last first), and those
// whose header does not.
func candidates(dir string) ([]File, []Skipped, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	var good []File
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
		good = append(good, File{Path: path, Info: info})
	}
	slices.SortFunc(good, func(a, b File) int {
		return cmp.Or(cmp.Compare(b.Info.Revision, a.Info.Revision), strings.Compare(b.Path, a.Path))
	})
	return good, bad, nil
}

// byIdentity splits files, keeping their order, into those of identity
// and the others.
func byIdentity(files []File, identity string) (own, foreign []File) {
	for _, f := range files {
		if f.Info.Identity == identity {
			own = append(own, f)
		} else {
			foreign = append(foreign, f)
		}
	}
	return own, foreign
}

// identities names the distinct identities of files, sorted, quoted.
func identities(files []File) string {
	var ids []string
	for _, f := range files {
		ids = append(ids, fmt.Sprintf("%q", f.Info.Identity))
	}
	slices.Sort(ids)
	return strings.Join(slices.Compact(ids), ", ")
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
