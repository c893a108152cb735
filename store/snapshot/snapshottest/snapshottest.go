// Package snapshottest writes snapshot files of any content, for tests of
// what reads, chooses and restores snapshots: headers no store would write
// (a time years ahead, another store's identity, a revision near the
// largest int64) and values no store could serve. It writes the format of
// store/snapshot's package doc, from that doc, with a good checksum, so
// that what it writes fails only where its content is meant to.
package snapshottest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
)

// Header is what a snapshot's header says; its count is the number of
// objects written.
type Header struct {
	// Identity is the identity of the store saved ("" for none).
	Identity string
	// Revision is the revision the snapshot says it reflects.
	Revision int64
	// Time is when it says it was taken; the zero Time writes DefaultTime.
	Time time.Time
}

// DefaultTime is the time of a Header whose Time is zero.
var DefaultTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Write writes to w a snapshot of format version 1 whose header says h,
// holding objs as given (in the order given, unchecked) and a trailer
// whose checksum matches.
func Write(w io.Writer, h Header, objs ...store.Object[[]byte]) error {
	if h.Time.IsZero() {
		h.Time = DefaultTime
	}
	var body bytes.Buffer
	lines := []any{map[string]any{
		"snapshot": "converge", "version": 1, "identity": h.Identity,
		"revision": h.Revision, "time": h.Time.UTC().Format(time.RFC3339Nano), "count": len(objs),
	}}
	if h.Identity == "" {
		delete(lines[0].(map[string]any), "identity")
	}
	for _, o := range objs {
		lines = append(lines, map[string]any{
			"key": o.Key, "value": o.Value, "revision": o.Revision, "createRevision": o.CreateRevision,
		})
	}
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		body.Write(append(b, '\n'))
	}
	sum := sha256.Sum256(body.Bytes())
	body.WriteString(`{"sha256":"` + hex.EncodeToString(sum[:]) + `"}` + "\n")
	_, err := w.Write(body.Bytes())
	return err
}

// WriteFile writes the snapshot of Write to the file at path (mode 0600),
// failing t if it cannot.
func WriteFile(t testing.TB, path string, h Header, objs ...store.Object[[]byte]) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, h, objs...); err != nil {
		t.Fatalf("snapshottest: %v", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatalf("snapshottest: %v", err)
	}
}

// Object returns an object of key holding value, created and last
// written at rev.
func Object(key, value string, rev int64) store.Object[[]byte] {
	return store.Object[[]byte]{Key: key, Value: []byte(value), Revision: rev, CreateRevision: rev}
}
