package changelog

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// segment is a segment file and what its header says.
type segment struct {
	path  string
	first int64  // from its name
	tag   string // from its name
	hdr   header
	err   error // why its header cannot be read; hdr is zero then
}

// listSegments returns the segment files of dir, ordered by the first
// revision of their names, their headers read.
func listSegments(dir string) ([]segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	var segs []segment
	for _, e := range entries {
		first, idTag, ok := parseName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		s := segment{path: filepath.Join(dir, e.Name()), first: first, tag: idTag}
		s.hdr, s.err = readHeader(s.path)
		segs = append(segs, s)
	}
	slices.SortFunc(segs, func(a, b segment) int {
		return cmp.Or(cmp.Compare(a.first, b.first), strings.Compare(a.path, b.path))
	})
	return segs, nil
}

func readHeader(path string) (header, error) {
	f, err := os.Open(path)
	if err != nil {
		return header{}, err
	}
	defer f.Close()
	p, err := readFrame(bufio.NewReader(f), nil)
	if err == io.EOF {
		err = fmt.Errorf("%w: an empty segment", errFrame)
	}
	if err != nil {
		return header{}, err
	}
	return decodeHeader(p)
}

// of returns the segments of the store whose identity is identity: by
// their header, or by their name's tag if the header cannot be read.
func of(segs []segment, identity string) []segment {
	var own []segment
	for _, s := range segs {
		if (s.err == nil && s.hdr.Identity == identity) || (s.err != nil && s.tag == tag(identity)) {
			own = append(own, s)
		}
	}
	return own
}

// epoch is a run of the log that holds every change after start up to
// last, shipped from one watch resumed without loss; its records restore
// onto a snapshot at a revision from start to last. base is the revision
// of the epoch's first segment's snapshot; start is base, or later if the
// first segments of the epoch were removed. damage, if not nil, is what
// ended the epoch before its end (matching ErrDamaged): what it held
// after last is never read.
type epoch struct {
	base, start, last int64
	damage            error
}

// walk is one reading of a store's log.
type walk struct {
	segs   []segment
	epochs []epoch
	// lost is the damage found before the first epoch began (the first
	// segment's header), if any.
	lost error
	// end is nil once every segment has been read, else what ended the
	// reading: an error matching ErrTorn (the last segment's) or the file
	// system's, or fn's. at is the segment index and offset of the end of
	// the last good frame read.
	end    error
	at     int
	offset int64
}

// walkLog reads segs (one store's, in order) and calls fn, if not nil,
// with every record and the index of its epoch, checking the order and
// continuity of the log. Damage (other than a torn tail) ends its epoch:
// the reading goes on at the next segment that starts an epoch, never
// inside the damaged one. It stops at a torn tail and at fn's first error
// (returned as is, in w.end).
func walkLog(segs []segment, fn func(e int, r Record) error) *walk {
	w := &walk{segs: segs}
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		w.at, w.offset = i, 0
		err := s.err
		if err == nil {
			err = w.begin(i, s.hdr)
		}
		if err == nil {
			err = w.records(s, fn)
		}
		if err == nil {
			continue
		}
		err = w.classify(i, err)
		if !errors.Is(err, ErrDamaged) || errors.Is(err, ErrTorn) {
			w.end = err
			return w
		}
		if len(w.epochs) == 0 {
			w.lost = err
		} else {
			w.epochs[len(w.epochs)-1].damage = err
		}
		i = w.nextEpoch(i) - 1
	}
	return w
}

// nextEpoch returns the index of the first segment after i that starts an
// epoch after the log read so far (or, before any epoch, the first whose
// header reads), or len(w.segs).
func (w *walk) nextEpoch(i int) int {
	for j := i + 1; j < len(w.segs); j++ {
		h := w.segs[j].hdr
		switch {
		case w.segs[j].err != nil:
		case len(w.epochs) == 0:
			return j // as if the segments before it had been removed
		case h.Prev == h.Base && h.Base >= w.last() && h.Base != w.epochs[len(w.epochs)-1].base:
			return j
		}
	}
	return len(w.segs)
}

// begin starts segment i, whose header is h: the next segment of the
// current epoch, or the first of a new one.
func (w *walk) begin(i int, h header) error {
	if len(w.epochs) == 0 {
		w.epochs = append(w.epochs, epoch{base: h.Base, start: h.Prev, last: h.Prev})
		return nil
	}
	cur := &w.epochs[len(w.epochs)-1]
	switch {
	case h.Base == cur.base && h.Prev == cur.last:
		return nil
	case h.Base == cur.base:
		return fmt.Errorf("%w: %s follows revision %d, the log before it ends at %d: a segment is missing", ErrDamaged, filepath.Base(w.segs[i].path), h.Prev, cur.last)
	case h.Prev != h.Base || h.Base < cur.last:
		return fmt.Errorf("%w: %s starts an epoch after revision %d (prev %d), the log before it ends at %d", ErrDamaged, filepath.Base(w.segs[i].path), h.Base, h.Prev, cur.last)
	}
	w.epochs = append(w.epochs, epoch{base: h.Base, start: h.Base, last: h.Base})
	return nil
}

// records reads the records of segment s.
func (w *walk) records(s segment, fn func(int, Record) error) error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	p, err := readFrame(br, nil)
	if err != nil {
		return err
	}
	w.offset = int64(frameHead + len(p))
	cur := &w.epochs[len(w.epochs)-1]
	var buf []byte
	for {
		buf, err = readFrame(br, buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		r, err := decodeRecord(buf)
		if err != nil {
			return err
		}
		if r.Revision <= s.hdr.Prev || r.Revision < cur.last {
			return fmt.Errorf("%w: a record of revision %d after revision %d", ErrDamaged, r.Revision, cur.last)
		}
		if fn != nil {
			if err := fn(len(w.epochs)-1, r); err != nil {
				return stopped{err}
			}
		}
		cur.last = r.Revision
		w.offset += int64(frameHead + len(buf))
	}
}

// stopped is the error of walkLog's fn.
type stopped struct{ err error }

func (s stopped) Error() string { return s.err.Error() }

// classify returns what ended the reading of segment i: a frame not whole
// in the last segment is its torn tail; any other damage is damage.
func (w *walk) classify(i int, err error) error {
	var st stopped
	switch {
	case errors.As(err, &st):
		return st.err
	case errors.Is(err, ErrFormat):
		return fmt.Errorf("changelog: %s: %w", w.segs[i].path, err)
	case errors.Is(err, errFrame) && i == len(w.segs)-1:
		return fmt.Errorf("%w (%w): %s at byte %d: %w", ErrTorn, ErrDamaged, w.segs[i].path, w.offset, err)
	case errors.Is(err, ErrDamaged):
		return fmt.Errorf("changelog: %s at byte %d: %w", w.segs[i].path, w.offset, err)
	}
	return fmt.Errorf("changelog: read %s: %w", w.segs[i].path, err)
}

// last returns the last revision the log covers, 0 if it has no epoch.
func (w *walk) last() int64 {
	if len(w.epochs) == 0 {
		return 0
	}
	return w.epochs[len(w.epochs)-1].last
}

// Records returns the records of the log in dir of the store whose
// identity is identity, in order, up to the end of the log or the first
// damage: then also an error matching ErrTorn (the last segment ends in a
// torn record: the log ends there) or ErrDamaged (the records after the
// damage are not returned: they are never read past). A directory without
// a segment of identity fails with ErrNoLog.
func Records(dir, identity string) ([]Record, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	own := of(segs, identity)
	if len(own) == 0 {
		return nil, fmt.Errorf("%w of identity %q in %s", ErrNoLog, identity, dir)
	}
	var recs []Record
	w := walkLog(own, func(_ int, r Record) error {
		recs = append(recs, r)
		return nil
	})
	return recs, w.errs()
}

// errs returns every damage the walk found and what ended it, joined.
func (w *walk) errs() error {
	errs := []error{w.lost}
	for _, e := range w.epochs {
		errs = append(errs, e.damage)
	}
	return errors.Join(append(errs, w.end)...)
}
