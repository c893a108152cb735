package snapshot

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/converge-go/converge/store"
)

// The lines of a snapshot, one JSON object each (see the package doc).
type (
	headerLine struct {
		Snapshot string    `json:"snapshot"` // formatName
		Version  int       `json:"version"`
		Identity string    `json:"identity,omitempty"`
		Revision int64     `json:"revision"`
		Time     time.Time `json:"time"`
		Count    int       `json:"count"`
	}
	objectLine struct {
		Key            string `json:"key"`
		Value          []byte `json:"value"` // base64, standard encoding
		Revision       int64  `json:"revision"`
		CreateRevision int64  `json:"createRevision"`
	}
	trailerLine struct {
		SHA256 string `json:"sha256"`
	}
)

// formatName is the header's "snapshot" member: what tells a snapshot from
// any other JSON lines.
const formatName = "converge"

// checksumPrefix starts Info.Checksum.
const checksumPrefix = "sha256:"

// maxLine bounds an object line a reader accepts: an object of
// MaxValueSize bytes with the longest key, every byte of it escaped.
// maxOtherLine bounds the header and the trailer, which hold no value.
var (
	maxLine      = base64.StdEncoding.EncodedLen(MaxValueSize) + 6*store.MaxKeyLen + 256
	maxOtherLine = 64 << 10
)

// encodeLine writes v as one line of JSON, HTML characters unescaped.
func encodeLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// decodeLine decodes one line into v, refusing unknown members and
// anything after the object.
func decodeLine(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}

// readLine returns the next line of br, with its newline, or an error: a
// line longer than limit, or the input ending without a newline
// (io.ErrUnexpectedEOF, or io.EOF if nothing was left), or the reader's
// error.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrDamaged, limit)
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line, nil
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}
