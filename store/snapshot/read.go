package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/converge-go/converge/store"
)

// Reader reads a snapshot one object at a time, checking it as it goes:
// NewReader reads the header, Next each object, and the last Next the
// trailer. Until Next has returned io.EOF the snapshot is not known to be
// whole, so a consumer commits nothing before (boltstore.Restore writes
// every object in one transaction, committed only then). A Reader is not
// safe for concurrent use.
type Reader struct {
	br     *bufio.Reader
	checks []ValueCheck
	hash   hash.Hash
	info   Info
	line   int // lines read
	read   int // objects read
	prev   string
	err    error // sticky: io.EOF once done, else the error that ended it
}

// NewReader reads and checks the header of the snapshot in r. It fails with
// an error matching ErrDamaged if r does not start with one, ErrFormat if
// the header names a version this package does not know, or r's error.
// Next runs checks (nil ones skipped) on every object it reads.
func NewReader(r io.Reader, checks ...ValueCheck) (*Reader, error) {
	rd := &Reader{br: bufio.NewReader(r), hash: sha256.New(), checks: checks}
	line, err := rd.next(maxOtherLine)
	if err != nil {
		return nil, err
	}
	// The name and the version first: a newer version may have other
	// members.
	var named struct {
		Snapshot string `json:"snapshot"`
		Version  int    `json:"version"`
	}
	if err := json.Unmarshal(line, &named); err != nil || named.Snapshot != formatName {
		return nil, fmt.Errorf("%w: no snapshot header", ErrDamaged)
	}
	if named.Version != Version {
		return nil, fmt.Errorf("%w: version %d, this package reads %d", ErrFormat, named.Version, Version)
	}
	var h headerLine
	if err := decodeLine(line, &h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrDamaged, err)
	}
	switch {
	case h.Revision < 0 || h.Count < 0 || h.Time.IsZero():
		return nil, fmt.Errorf("%w: header with revision %d, count %d, time %v", ErrDamaged, h.Revision, h.Count, h.Time)
	}
	rd.info = Info{Version: h.Version, Identity: h.Identity, Revision: h.Revision, Time: h.Time.UTC(), Count: h.Count}
	return rd, nil
}

// Info returns what the header says; its Checksum is set once Next has
// returned io.EOF.
func (r *Reader) Info() Info { return r.info }

// Next returns the next object, in key order, or io.EOF once every object
// has been read and the trailer checked: the count, the checksum, and
// nothing after the trailer. Any other error (one matching ErrDamaged,
// ErrUnservable for an object a check of NewReader refused, or the
// underlying reader's) means the snapshot is no good, the objects
// returned before included; Next then keeps returning it.
func (r *Reader) Next() (store.Object[[]byte], error) {
	if r.err != nil {
		return store.Object[[]byte]{}, r.err
	}
	var obj store.Object[[]byte]
	var err error
	if r.read == r.info.Count {
		err = r.trailer()
	} else {
		obj, err = r.object()
	}
	if err != nil {
		r.err = err
		return store.Object[[]byte]{}, err
	}
	return obj, nil
}

// object reads and checks the next object line.
func (r *Reader) object() (store.Object[[]byte], error) {
	line, err := r.next(maxLine)
	if err != nil {
		return store.Object[[]byte]{}, err
	}
	var l objectLine
	if err := decodeLine(line, &l); err != nil {
		return store.Object[[]byte]{}, fmt.Errorf("%w: line %d: %v", ErrDamaged, r.line, err)
	}
	obj := store.Object[[]byte]{Key: l.Key, Value: l.Value, Revision: l.Revision, CreateRevision: l.CreateRevision}
	if err := checkObject(r.prev, obj, r.info.Revision); err != nil {
		return store.Object[[]byte]{}, fmt.Errorf("%w: line %d: %v", ErrDamaged, r.line, err)
	}
	if err := checkValue(r.checks, obj, r.line); err != nil {
		return store.Object[[]byte]{}, err
	}
	r.prev = obj.Key
	r.read++
	return obj, nil
}

// checkObject checks what every object of a snapshot at revision rev
// holds: a valid key after prev (keys in strictly increasing order), a
// value, and revisions 1 <= CreateRevision <= Revision <= rev.
func checkObject(prev string, o store.Object[[]byte], rev int64) error {
	switch {
	case store.ValidateKey(o.Key) != nil:
		return store.ValidateKey(o.Key)
	case prev != "" && o.Key <= prev:
		return fmt.Errorf("key %q after %q: not in key order", o.Key, prev)
	case o.Value == nil:
		return fmt.Errorf("object %q without a value", o.Key)
	case o.CreateRevision < 1 || o.Revision < o.CreateRevision || o.Revision > rev:
		return fmt.Errorf("object %q at revision %d (created %d) in a snapshot at %d", o.Key, o.Revision, o.CreateRevision, rev)
	}
	return nil
}

// trailer reads and checks the trailer, and that nothing follows it.
func (r *Reader) trailer() error {
	sum := hex.EncodeToString(r.hash.Sum(nil))
	line, err := readLine(r.br, maxOtherLine)
	if err != nil {
		return r.damaged(err)
	}
	// The trailer is outside the checksum: it must be exactly the line
	// Save writes (encoding/json alone would take "SHA256" for "sha256").
	var want bytes.Buffer
	if err := encodeLine(&want, trailerLine{SHA256: sum}); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if !bytes.Equal(line, want.Bytes()) {
		var t trailerLine
		if err := decodeLine(line, &t); err != nil {
			return fmt.Errorf("%w: line %d: no trailer after %d objects: %v", ErrDamaged, r.line+1, r.read, err)
		}
		return fmt.Errorf("%w: checksum mismatch: the trailer says %q, the content has %s", ErrDamaged, t.SHA256, sum)
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		if err == nil {
			return fmt.Errorf("%w: data after the trailer", ErrDamaged)
		}
		return fmt.Errorf("snapshot: read: %w", err)
	}
	r.info.Checksum = checksumPrefix + sum
	return io.EOF
}

// next reads the next line of the checksummed part, of at most limit
// bytes.
func (r *Reader) next(limit int) ([]byte, error) {
	line, err := readLine(r.br, limit)
	if err != nil {
		return nil, r.damaged(err)
	}
	r.line++
	r.hash.Write(line)
	return line, nil
}

// damaged reports a failed read: the end of the input before the trailer is
// a truncated snapshot; any other error is the reader's.
func (r *Reader) damaged(err error) error {
	switch {
	case errors.Is(err, ErrDamaged):
		return err
	case err == io.EOF, err == io.ErrUnexpectedEOF:
		return fmt.Errorf("%w: truncated after %d lines", ErrDamaged, r.line)
	}
	return fmt.Errorf("snapshot: read: %w", err)
}

// Read reads and checks the whole snapshot in r, running checks on every
// object as NewReader does, and returns its objects only if it is good: an
// error matching ErrDamaged, ErrFormat, ErrUnservable or r's error returns
// none. The objects are held in memory; Reader reads one at a time.
func Read(r io.Reader, checks ...ValueCheck) (Info, []store.Object[[]byte], error) {
	rd, err := NewReader(r, checks...)
	if err != nil {
		return Info{}, nil, err
	}
	var objs []store.Object[[]byte]
	for {
		obj, err := rd.Next()
		if err == io.EOF {
			return rd.Info(), objs, nil
		}
		if err != nil {
			return Info{}, nil, err
		}
		objs = append(objs, obj)
	}
}

// ReadFile is Read of the file at path; its errors name the file.
func ReadFile(path string) (Info, []store.Object[[]byte], error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, nil, err
	}
	defer f.Close()
	info, objs, err := Read(f)
	if err != nil {
		return Info{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return info, objs, nil
}

// CheckFile reads and checks the whole snapshot in the file at path
// without keeping its objects, and returns its Info: what Latest and
// `convergectl snapshot inspect` do.
func CheckFile(path string) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	rd, err := NewReader(f)
	for err == nil {
		_, err = rd.Next()
	}
	if err != io.EOF {
		return Info{}, fmt.Errorf("%s: %w", path, err)
	}
	return rd.Info(), nil
}
