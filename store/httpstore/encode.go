package httpstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/converge-go/converge/store"
)

// valueEncoder encodes the values a handler sends. When both the wire codec
// and the served store's codec (store.Encoded) are store.JSON, the values
// the store hands out were decoded from bytes that passed store.JSON's
// round-trip check, and values it accepts are checked by the store itself:
// plain encoding/json then yields the bytes the store keeps, without the
// check's second decode and encode. Otherwise every value goes through the
// wire codec's Marshal.
type valueEncoder[T any] struct {
	codec   store.Codec[T]
	trusted bool // see above: json.Marshal gives the store's bytes
}

func newValueEncoder[T any](s store.Store[T], codec store.Codec[T]) valueEncoder[T] {
	_, wireJSON := codec.(store.JSON[T])
	enc, ok := s.(store.Encoded[T])
	trusted := false
	if ok && wireJSON {
		_, trusted = enc.Codec().(store.JSON[T])
	}
	return valueEncoder[T]{codec: codec, trusted: trusted}
}

// marshal encodes v for the wire: compact, valid JSON when trusted (the
// encoder then writes it as is).
func (e valueEncoder[T]) marshal(v T) ([]byte, error) {
	if e.trusted {
		return json.Marshal(v)
	}
	return e.codec.Marshal(v)
}

// bufPool holds the buffers answers and watch batches are encoded into.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf is the largest buffer returned to the pool: a huge list
// answer's buffer is left to the garbage collector.
const maxPooledBuf = 64 << 10

func getBuf() *bytes.Buffer { return bufPool.Get().(*bytes.Buffer) }

func putBuf(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuf {
		return
	}
	b.Reset()
	bufPool.Put(b)
}

// appendObject appends wo as JSON, with the same fields and names as
// encoding/json would write. Its value is written as is if compact is set
// (valueEncoder.trusted), else validated and compacted as encoding/json
// does with a json.RawMessage; a value that is not JSON is an error.
func appendObject(buf *bytes.Buffer, wo *wireObject, compact bool) error {
	buf.WriteString(`{"key":`)
	appendString(buf, wo.Key)
	buf.WriteString(`,"value":`)
	switch {
	case len(wo.Value) == 0:
		buf.WriteString("null")
	case compact:
		buf.Write(wo.Value)
	default:
		if err := json.Compact(buf, wo.Value); err != nil {
			return fmt.Errorf("httpstore: the codec's encoding of %q is not JSON: %w", wo.Key, err)
		}
	}
	buf.WriteString(`,"revision":`)
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), wo.Revision, 10))
	buf.WriteString(`,"createRevision":`)
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), wo.CreateRevision, 10))
	if wo.Deleted {
		buf.WriteString(`,"deleted":true`)
	}
	buf.WriteByte('}')
	return nil
}

// appendString appends s as a JSON string. Keys are valid UTF-8 (every
// store checks them); anything else goes through encoding/json, which
// writes invalid bytes as U+FFFD.
func appendString(buf *bytes.Buffer, s string) {
	if !utf8.ValidString(s) {
		b, _ := json.Marshal(s) // a string always encodes
		buf.Write(b)
		return
	}
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf.WriteString(s[start:i])
		switch c {
		case '"', '\\':
			buf.WriteByte('\\')
			buf.WriteByte(c)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			buf.WriteString(`\u00`)
			buf.WriteByte(hex[c>>4])
			buf.WriteByte(hex[c&0xf])
		}
		start = i + 1
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
}

// appendFrame appends f and a newline: event frames by appendObject, the
// others (rare) by encoding/json.
func appendFrame(buf *bytes.Buffer, f *frame, compact bool) error {
	if f.Object == nil {
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
		return nil
	}
	n := buf.Len()
	buf.WriteString(`{"type":`)
	appendString(buf, f.Type)
	buf.WriteString(`,"object":`)
	if err := appendObject(buf, f.Object, compact); err != nil {
		buf.Truncate(n)
		return err
	}
	if f.Cause != "" {
		buf.WriteString(`,"cause":`)
		appendString(buf, f.Cause)
	}
	buf.WriteString("}\n")
	return nil
}

// writeBody answers with status and the JSON body in buf, in one write with
// its Content-Length.
func writeBody(w http.ResponseWriter, status int, buf *bytes.Buffer) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeObject answers with status and wo.
func writeObject(w http.ResponseWriter, status int, wo *wireObject, compact bool) error {
	buf := getBuf()
	defer putBuf(buf)
	if err := appendObject(buf, wo, compact); err != nil {
		return err
	}
	buf.WriteByte('\n') // as json.Encoder ends its output
	writeBody(w, status, buf)
	return nil
}
