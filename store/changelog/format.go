package changelog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/snapshot"
)

// Version is the format version of the segments a Shipper writes.
const Version = 1

// A segment is a file of frames: its header, then one record per change.
// A frame is the payload's length (4 bytes, little-endian), the CRC-32C
// (Castagnoli) of the payload (4 bytes, little-endian), then the payload.
// The header's payload is a JSON object (header); a record's is binary:
// op (1 byte), revision, create revision and time in Unix nanoseconds (8
// bytes each, little-endian), the key's length (4 bytes) and the key, then
// the value to the frame's end.
const (
	frameHead  = 8
	recordHead = 1 + 8 + 8 + 8 + 4
	// maxFrame bounds a frame a reader accepts, so that a damaged length
	// cannot make it allocate without bound.
	maxFrame = recordHead + store.MaxKeyLen + snapshot.MaxValueSize
)

// formatName is the header's "changelog" member.
const formatName = "converge"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the first frame of a segment: the store it is of, the
// revision its epoch starts after (Base: its records restore only onto a
// snapshot at or above it) and the revision of the last record before the
// segment (Prev: Base for an epoch's first segment, else the previous
// segment's last), and when the segment was made (the state at Prev was
// the store's then: what a restore to a time before its first record
// finds).
type header struct {
	Changelog string    `json:"changelog"`
	Version   int       `json:"version"`
	Identity  string    `json:"identity"`
	Base      int64     `json:"base"`
	Prev      int64     `json:"prev"`
	Time      time.Time `json:"time"`
}

// Segment file names: "changes-" + the lowest revision it may hold (20
// digits) + "-" + a tag of the store's identity + ".log".
const (
	segPrefix = "changes-"
	segExt    = ".log"
)

// tag returns the part of a segment's name that tells its store.
func tag(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:6])
}

func segName(first int64, identity string) string {
	return fmt.Sprintf("%s%020d-%s%s", segPrefix, first, tag(identity), segExt)
}

// parseName returns the first revision and tag of a segment's name.
func parseName(name string) (first int64, idTag string, ok bool) {
	rest, found := strings.CutPrefix(name, segPrefix)
	if !found {
		return 0, "", false
	}
	rest, found = strings.CutSuffix(rest, segExt)
	num, idTag, found2 := strings.Cut(rest, "-")
	if !found || !found2 || len(num) != 20 {
		return 0, "", false
	}
	first, err := strconv.ParseInt(num, 10, 64)
	return first, idTag, err == nil
}

// appendFrame appends the frame of payload to b.
func appendFrame(b, payload []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// errFrame is the error of a frame not whole on disk: its head or payload
// cut, a length out of range, a checksum that does not match. In the last
// segment, it is a torn tail.
var errFrame = fmt.Errorf("%w: a frame not whole", ErrDamaged)

// readFrame reads one frame's payload from r. It returns io.EOF at a
// clean end, and an error matching errFrame (and ErrDamaged) for a frame
// not whole or whose length or checksum does not match.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var head [frameHead]byte
	if n, err := io.ReadFull(r, head[:]); err == io.EOF {
		return nil, io.EOF
	} else if err == io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%w: its head cut after %d bytes", errFrame, n)
	} else if err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(head[:4])
	if n == 0 || n > maxFrame {
		return nil, fmt.Errorf("%w: a length of %d bytes", errFrame, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%w: %d bytes cut short", errFrame, n)
	} else if err != nil {
		return nil, err
	}
	if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(head[4:]) {
		return nil, fmt.Errorf("%w: its checksum does not match", errFrame)
	}
	return buf, nil
}

func encodeHeader(h header) []byte {
	h.Changelog, h.Version = formatName, Version
	b, _ := json.Marshal(h) // strings and numbers only
	return b
}

func decodeHeader(payload []byte) (header, error) {
	var named struct {
		Changelog string `json:"changelog"`
		Version   int    `json:"version"`
	}
	if err := json.Unmarshal(payload, &named); err != nil || named.Changelog != formatName {
		return header{}, fmt.Errorf("%w: no segment header", ErrDamaged)
	}
	if named.Version != Version {
		return header{}, fmt.Errorf("%w: version %d, this package reads %d", ErrFormat, named.Version, Version)
	}
	var h header
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return header{}, fmt.Errorf("%w: segment header: %v", ErrDamaged, err)
	}
	if h.Base < 0 || h.Prev < h.Base || !utf8.ValidString(h.Identity) {
		return header{}, fmt.Errorf("%w: segment header with base %d, prev %d", ErrDamaged, h.Base, h.Prev)
	}
	return h, nil
}

func encodeRecord(b []byte, r Record) []byte {
	b = append(b, byte(r.Op))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Revision))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.CreateRevision))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Time.UnixNano()))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Key)))
	b = append(b, r.Key...)
	return append(b, r.Value...)
}

// decodeRecord decodes a record's payload and checks what every record
// holds; the record's Key and Value are copies.
func decodeRecord(p []byte) (Record, error) {
	if len(p) < recordHead {
		return Record{}, fmt.Errorf("%w: a record of %d bytes", ErrDamaged, len(p))
	}
	r := Record{
		Op:             Op(p[0]),
		Revision:       int64(binary.LittleEndian.Uint64(p[1:])),
		CreateRevision: int64(binary.LittleEndian.Uint64(p[9:])),
		Time:           time.Unix(0, int64(binary.LittleEndian.Uint64(p[17:]))).UTC(),
	}
	n := binary.LittleEndian.Uint32(p[25:])
	if uint64(n) > uint64(len(p)-recordHead) {
		return Record{}, fmt.Errorf("%w: a key of %d bytes in a record of %d", ErrDamaged, n, len(p))
	}
	r.Key = string(p[recordHead : recordHead+int(n)])
	r.Value = append([]byte{}, p[recordHead+int(n):]...)
	if err := checkRecord(r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	return r, nil
}

// checkRecord checks what every record holds.
func checkRecord(r Record) error {
	switch {
	case r.Op != Put && r.Op != Delete:
		return fmt.Errorf("a record of op %d", r.Op)
	case store.ValidateKey(r.Key) != nil:
		return store.ValidateKey(r.Key)
	case r.Revision < 1:
		return fmt.Errorf("a record of %q at revision %d", r.Key, r.Revision)
	case r.Op == Put && (r.CreateRevision < 1 || r.CreateRevision > r.Revision):
		return fmt.Errorf("a put of %q at revision %d, created at %d", r.Key, r.Revision, r.CreateRevision)
	case r.Op == Delete && (r.CreateRevision != 0 || len(r.Value) != 0):
		return fmt.Errorf("a delete of %q with a value or a create revision", r.Key)
	}
	return nil
}
